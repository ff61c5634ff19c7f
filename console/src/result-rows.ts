// A job's result rows as the Batches page lists its failures. GET /v1/batches/{id}/results writes
// each row in the dialect the job was created in (docs/compatibility.md):
//   ours    {custom_id, id, answers, usage} or {custom_id, error: {code, message}}
//   OpenAI  {id, custom_id, response: {status_code, request_id, body}, error: null}; a refused
//           request has its status and the endpoint's own error body (ours {code, message},
//           OpenAI's {error: {message, type, code}}, System One's {detail}); a line that was no
//           request at all has response null and error {code, message}.

export interface RowFailure {
  code: string;
  message: string;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The code and message of an endpoint's error body, whichever of the three shapes it has. */
function bodyError(body: unknown): { code?: string; message: string } {
  if (isObject(body)) {
    if (isObject(body.error)) return { code: text(body.error.code) ?? text(body.error.type), message: text(body.error.message) ?? '' };
    if (text(body.code) !== undefined || text(body.message) !== undefined) return { code: text(body.code), message: text(body.message) ?? '' };
    const detail = body.detail;
    if (typeof detail === 'string') return { message: detail };
    if (isObject(detail)) return { code: text(detail.error_type), message: text(detail.message) ?? '' };
    if (Array.isArray(detail)) {
      const problems = detail.filter(isObject).map((p) => `${Array.isArray(p.loc) ? p.loc.join('.') : ''}: ${String(p.msg ?? '')}`);
      return { code: 'validation_error', message: problems.join('; ') };
    }
  }
  return { message: JSON.stringify(body)?.slice(0, 500) ?? '' };
}

/** Why a result row failed, or undefined when it was answered. */
export function rowFailure(row: unknown): RowFailure | undefined {
  if (!isObject(row)) return { code: 'unreadable', message: 'the row is not a JSON object' };
  if ('response' in row) {
    const response = row.response;
    if (isObject(response)) {
      if (response.status_code === 200) return undefined;
      const { code, message } = bodyError(response.body);
      const status = `HTTP ${String(response.status_code)}`;
      return { code: code ? `${status} ${code}` : status, message };
    }
    const error = isObject(row.error) ? row.error : {};
    return { code: text(error.code) ?? 'failed', message: text(error.message) ?? 'the line got no response' };
  }
  if (isObject(row.error)) return { code: text(row.error.code) ?? 'failed', message: text(row.error.message) ?? '' };
  return undefined;
}
