// The console's only way to the server: the public HTTP API, with the key from key-store.ts as a
// Bearer header (never in a URL, never a cookie: `credentials: 'omit'`). A non-2xx answer becomes
// an ApiProblem carrying the API's code, message, request id and Retry-After, which describe()
// turns into what it means for the person looking at the page.
import { clearKey, readKey } from './key-store';

export interface ErrorBody {
  code?: string;
  message?: string;
  request_id?: string;
}

export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId?: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
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
  return getJson<T>(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** What an API error means, in a sentence a person can act on. */
export function describe(err: unknown): { title: string; detail: string } {
  if (!(err instanceof ApiProblem)) return { title: 'Something went wrong in the page', detail: String((err as Error)?.message ?? err) };
  const id = err.requestId ? ` (request ${err.requestId})` : '';
  switch (err.status) {
    case 0:
      return { title: 'The server cannot be reached', detail: err.message };
    case 400:
    case 415:
      return { title: 'The request was refused', detail: `${err.message}${id}` };
    case 401:
      return { title: 'The API key was not accepted', detail: err.message };
    case 404:
      return { title: 'Not found', detail: `${err.message}${id}` };
    case 413:
      return { title: 'Too large', detail: `${err.message}${id}` };
    case 429:
      return {
        title: err.retryAfterSeconds ? `Rate limited: try again in ${err.retryAfterSeconds} s` : 'Rate limited: try again shortly',
        detail: `${err.message}${id}`,
      };
    case 503:
      return { title: 'The service is not ready (a model may still be loading); try again shortly', detail: `${err.message}${id}` };
    default:
      return { title: `Server error ${err.status}: retry with backoff`, detail: `${err.message}${id}` };
  }
}
