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
