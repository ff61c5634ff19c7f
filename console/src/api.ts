// The console's only way to the server: the public HTTP API, with the key from key-store.ts as a
// Bearer header (never in a URL, never a cookie: `credentials: 'omit'`). A non-2xx answer becomes
// an ApiProblem (problems.ts) carrying the API's code, message, request id and Retry-After.
import { jsonInOrder } from '../../src/domain/key-order.js';
import { clearKey, readKey } from './key-store.js';
import { ApiProblem } from './problems.js';

export { ApiProblem, describe } from './problems.js';

export interface ErrorBody {
  code?: string;
  message?: string;
  request_id?: string;
}

/** Called when the server rejects the key (401): the app shows the key form again. */
let onKeyRejected: (message: string) => void = () => undefined;
export function whenKeyRejected(handler: (message: string) => void): void {
  onKeyRejected = handler;
}

async function problemOf(res: Response): Promise<ApiProblem> {
  let body: ErrorBody = {};
  try {
    body = (await res.json()) as ErrorBody;
  } catch {
    // Not our error shape (a proxy's page, say): the status alone speaks.
  }
  const retry = Number(res.headers.get('retry-after'));
  return new ApiProblem(
    res.status,
    body.code ?? `http_${res.status}`,
    body.message ?? res.statusText ?? 'no message',
    body.request_id ?? res.headers.get('x-request-id') ?? undefined,
    Number.isFinite(retry) && retry > 0 ? retry : undefined,
  );
}

/** fetch() against this origin with the key; throws ApiProblem for a non-2xx answer or no answer. */
export async function call(path: string, init: RequestInit & { key?: string; anonymous?: boolean } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const key = init.key ?? readKey();
  if (key && !init.anonymous) headers.set('authorization', `Bearer ${key}`);
  let res: Response;
  try {
    res = await fetch(path, { ...init, headers, credentials: 'omit', cache: 'no-store' });
  } catch (err) {
    throw new ApiProblem(0, 'unreachable', `the server did not answer (${(err as Error).message})`);
  }
  if (res.ok) return res;
  const problem = await problemOf(res);
  if (res.status === 401 && !init.key) {
    clearKey();
    onKeyRejected(problem.message);
  }
  throw problem;
}

export async function getJson<T>(path: string, init?: Parameters<typeof call>[1]): Promise<T> {
  return (await (await call(path, init)).json()) as T;
}

export async function postJson<T>(path: string, body: unknown): Promise<T> {
  // Keys in the order the page recorded (the playground's rows), integer-like ones included.
  return getJson<T>(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: jsonInOrder(body) });
}
