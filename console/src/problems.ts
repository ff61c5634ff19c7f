// An API error as the console holds it (status, the API's code and message, request id,
// Retry-After), and what it means in a sentence a person can act on. No browser globals: the unit
// tests run it under Node.
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
      // Only a 5xx may pass with time; any other 4xx (431 headers too large, 405, 409, 422, ...)
      // is about the request itself, and sending it again gets the same answer.
      if (err.status >= 500) return { title: `Server error ${err.status}: retry with backoff`, detail: `${err.message}${id}` };
      if (err.status >= 400) return { title: `The request was refused (HTTP ${err.status})`, detail: `${err.message}${id}` };
      return { title: `Unexpected answer from the server (HTTP ${err.status})`, detail: `${err.message}${id}` };
  }
}
