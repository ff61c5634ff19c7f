/**
 * A request line's target in origin form (`/path?query`): an absolute-form target
 * (`http://user:pass@host/path?query`, which proxies send and Node passes on as it came) loses its
 * scheme and authority, credentials included.
 * @example originForm('http://u:p@h:8080/v1/decide?x=1') // '/v1/decide?x=1'
 */
export function originForm(target: string): string {
  const authority = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(target);
  if (!authority) return target;
  const rest = target.slice(authority[0].length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}

/**
 * A request target's path: its origin form without the query or fragment (what routing, door
 * shapes and error messages go by).
 * @example requestPath('http://h/v1/decide?key=1') // '/v1/decide'
 */
export function requestPath(target: string): string {
  return originForm(target).split(/[?#]/)[0]!;
}
