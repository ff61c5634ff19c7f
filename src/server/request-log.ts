/**
 * What the server's log lines about a request carry (docs/api.md, "Request ids and logs"): the
 * logger's settings (what is redacted, how a request and a response are written), the lines
 * fastify writes per request, and the line of an error answer. Every one carries the request id
 * (the request logger's binding). `incoming request` has the method and path as the request
 * arrives; `request completed`, `request rejected` and `request failed` each have the method, path
 * and status, so one line answers "which path answered 500" without joining it to another. No
 * line carries the query string, a header, a body or a state.
 */
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

import type { ErrorCode } from '../api/errors.js';
import type { ServerOptions } from './server-options.js';
import { originForm } from './request-target.js';

/**
 * A URL for the log: its path, in origin form (an absolute-form target's scheme, host and
 * credentials dropped), with whatever follows a `?`, `#` or `;` replaced by `[redacted]` (clients
 * put keys in query strings, and a path parameter or fragment may carry one too).
 * @example urlForLog('/v1/batches?key=secret') // '/v1/batches?[redacted]'
 */
export function urlForLog(url: string): string {
  const path = originForm(url);
  const cut = path.search(/[?#;]/);
  return cut === -1 ? path : `${path.slice(0, cut + 1)}[redacted]`;
}

/**
 * A request as a log line writes it: method and URL (query redacted). Already reduced, so that a
 * host's own request serializer (decisionApp in a host's app) has nothing more to write out.
 */
function requestForLog(request: FastifyRequest): { method: string; url: string } {
  return { method: request.method, url: urlForLog(request.url) };
}

/**
 * Any `headers` object a log call carries, wherever it puts it: fastify's request, a plugin's
 * options (@fastify/multipart logs busboy's options at trace, the request's headers among them),
 * an error's. Up to four levels deep: pino's redaction has no wildcard for any depth.
 */
const HEADERS_ANYWHERE = ['headers', '*.headers', '*.*.headers', '*.*.*.headers'];

/**
 * Logs never carry the Authorization header, keys, bodies, state or query strings: requests log
 * method and path only, and any headers object is redacted whole, at every level.
 */
export function loggerConfig(logger: ServerOptions['logger']) {
  if (!logger) return false;
  const opts = logger === true ? {} : logger;
  return {
    level: opts.level ?? 'info',
    ...(opts.stream ? { stream: opts.stream } : {}),
    redact: { paths: [...HEADERS_ANYWHERE, 'req.body', 'body'], censor: '[redacted]' },
    serializers: {
      req: (req: FastifyRequest) => ({ method: req.method, url: urlForLog(req.url), remoteAddress: req.ip }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
  };
}

/**
 * Fastify's per-request lines (createServer's), with the request's method and path also on the
 * line written when its answer has gone out: fastify's own has the status alone.
 */
export class RequestLog extends LogController {
  constructor() {
    super({ requestIdLogLabel: 'request_id' });
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    const line = { req: requestForLog(request), res: reply, responseTime: reply.elapsedTime };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}

/**
 * The status the log and /metrics give a request whose client closed its connection before the
 * answer (nginx's 499, "client closed request"): no answer was sent, none is counted under another.
 */
export const CLIENT_CLOSED_STATUS = 499;

/** The line of a request whose client left before its answer (abandoned.ts): a decision's engine work not yet done is dropped. */
export function logAbandoned(request: FastifyRequest, closedByStop = false): void {
  if (closedByStop) {
    request.log.info({ req: requestForLog(request), status: REQUEST_TIMEOUT_STATUS }, 'request cut by the stop: still arriving, or its answer unread, past the request time limit');
  } else {
    request.log.info({ req: requestForLog(request), status: CLIENT_CLOSED_STATUS }, 'request abandoned: the client closed the connection before its answer');
  }
}

/** The status a request cut by the stop's deadline is logged with (it gets no answer). */
const REQUEST_TIMEOUT_STATUS = 408;

/**
 * The line of an error answer, on every door: a 5xx is `request failed` with the error; a 4xx is
 * `request rejected` with our code only (the same on every door; the message may quote the
 * request), without a stack trace. A request whose client already left (a body cut short) gets
 * no answer and its `request abandoned` line instead.
 */
export function logErrorAnswer(request: FastifyRequest, status: number, code: ErrorCode, err: unknown): void {
  if (request.raw.aborted || request.raw.socket?.destroyed === true) return;
  if (status >= 500) request.log.error({ req: requestForLog(request), status, err }, 'request failed');
  else request.log.info({ req: requestForLog(request), code, status }, 'request rejected');
}
