// The API key lives in this tab's sessionStorage only: gone when the tab closes, never in a cookie
// (so the server has no ambient credential to be tricked into using) and never in a URL.
const KEY = 'decide.apiKey';

export function readKey(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function storeKey(key: string): void {
  sessionStorage.setItem(KEY, key);
}

export function clearKey(): void {
  sessionStorage.removeItem(KEY);
}

/**
 * Why `key` cannot be an API key, or '' when it may be one. Keys are ASCII (letters, digits and a
 * few marks, see docs/api.md); a header cannot carry characters beyond Latin-1 at all, so such a
 * key is answered here, by name, rather than failing inside the browser's fetch.
 */
export function keyProblem(key: string): string {
  const odd = [...key].find((c) => c < ' ' || c > '~');
  return odd === undefined ? '' : `An API key is plain ASCII (letters, digits and - . _ ~ + / =); this one has ${JSON.stringify(odd)}, so no server holds it.`;
}
