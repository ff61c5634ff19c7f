/**
 * Cache scopes as the engine takes them. A caller names its scope with a string (the server passes
 * the API key's id); the engine's prefix cache takes a small integer per group. Each distinct name
 * gets the next integer for the life of the runtime; no name (or '') is scope 0, shared by every
 * caller that names none (the in-process library's default).
 */
export class CacheScopes {
  private readonly ids = new Map<string, number>();

  idOf(scope: string | undefined): number {
    if (scope === undefined || scope === '') return 0;
    let id = this.ids.get(scope);
    if (id === undefined) {
      id = this.ids.size + 1;
      this.ids.set(scope, id);
    }
    return id;
  }
}
