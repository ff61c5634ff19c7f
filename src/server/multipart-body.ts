/**
 * The rules every multipart form of the API shares (the batch form, OpenAI's Files form).
 * A multipart body that cannot be parsed is the client's fault: busboy's parse errors (no boundary,
 * a body that is not multipart, one that ends before its closing boundary) and @fastify/multipart's
 * limit errors become 400 invalid_question here, instead of reaching the error handler as unknown
 * errors (500 with a stack trace in the log). Errors from our own handling of the parts (writing
 * the upload to disk) are not touched: they pass through as they are. A part without a name and a
 * JSONL file sent as a text field are refused here too, with the same words on every form. A part
 * named like an Object.prototype member, which @fastify/multipart refuses itself without naming
 * it, is handed back to the form (formParts) to refuse as the unknown field it is.
 */
import type { Multipart } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';

import { ApiError, isApiError } from '../api/errors.js';

/** The fields of our batch form, named when a form has too many parts. */
const BATCH_FORM_FIELDS = 'model, file and optionally questions';

/** A `file` part sent without a filename, which busboy reads as a text field, not as the upload. */
export const FILE_SENT_AS_TEXT =
  "form field 'file': must be a file part with a filename (the JSONL file, as curl -F file=@input.jsonl sends it), got a text field";

/**
 * A form part's field name. A part whose Content-Disposition has no `name=` (`form-data` alone,
 * or only a filename) has none; that is the client's error, so a 400 naming the form's fields
 * here, never a TypeError on the missing name. A file part's bytes are drained first.
 */
export function partName(part: Multipart, fields: string = BATCH_FORM_FIELDS): string {
  if (typeof part.fieldname === 'string') return part.fieldname;
  if (part.type === 'file') part.file.resume();
  throw new ApiError(
    'invalid_question',
    `request body: a form part has no name (Content-Disposition: form-data without name="..."); send the fields ${fields}, each named`,
  );
}

/**
 * The 400 for a parse or limit error raised while reading a multipart body. `fields` names the
 * form's fields for the too-many-parts message (each multipart route has its own form).
 */
export function malformedMultipart(err: unknown, fields: string = BATCH_FORM_FIELDS): ApiError {
  if (isApiError(err)) return err;
  const code = (err as { code?: unknown })?.code;
  if (code === 'FST_PARTS_LIMIT' || code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT') {
    return new ApiError('invalid_question', `request body: too many form parts; send the fields ${fields}, once each`);
  }
  // busboy's messages are fixed texts ('Multipart: Boundary not found', 'Unexpected end of
  // multipart data'); they never quote the body.
  const reason = err instanceof Error && err.message ? err.message.slice(0, 200) : 'unreadable';
  return new ApiError('invalid_question', `request body: not a complete multipart/form-data body (${reason})`, { cause: err });
}

/** The options of request.parts() (busboy's, without the headers). */
type PartsOptions = NonNullable<Parameters<FastifyRequest['parts']>[0]>;

/** A part as busboy read its headers: its name, and whether it is read as a file. */
export interface PartHead {
  name: string;
  file: boolean;
}

/** busboy's own rule when a form gives none: a part with a filename or of type application/octet-stream. */
const busboyIsPartAFile = (_name: string | undefined, type: string | undefined, filename: string | undefined) =>
  filename !== undefined || type === 'application/octet-stream';

/**
 * request.parts() for one of the API's forms, read through readingMultipart(). @fastify/multipart
 * refuses a part named like an Object.prototype member (`constructor`, `toString`, `__proto__`)
 * by itself, with an error that names no field and comes only once the rest of the body has been
 * read; to the form it is a field it does not know like any other, so `unknownPart(head)` gives
 * the form's own error for it. Its name is the first that busboy passed to isPartAFile (busboy
 * asks once per part, as it reads the part's headers) and the plugin refuses, by the plugin's own
 * test. `fields` names the form's fields for malformedMultipart().
 */
export function formParts(
  request: FastifyRequest,
  options: PartsOptions,
  form: { fields?: string; unknownPart: (head: PartHead) => Error },
): AsyncGenerator<Multipart> {
  const isPartAFile = options.isPartAFile ?? busboyIsPartAFile;
  let refused: PartHead | undefined;
  const parts = request.parts({
    ...options,
    isPartAFile: (name, type, filename) => {
      const file = isPartAFile(name, type, filename);
      if (!refused && name !== undefined && name in Object.prototype) refused = { name, file };
      return file;
    },
  });
  // The plugin keeps reading past the refused part, and a later fault (a file over the form's count)
  // may take its error's place: once a part has been refused, that is the error.
  return readingMultipart(parts, (err) => (refused ? form.unknownPart(refused) : malformedMultipart(err, form.fields)));
}

/** Iterates `source`, turning every error its iteration raises into `toError(err)` (default malformedMultipart(err)). */
export async function* readingMultipart<T>(
  source: AsyncIterable<T>,
  toError: (err: unknown) => Error = (err) => malformedMultipart(err),
): AsyncGenerator<T> {
  const iterator = source[Symbol.asyncIterator]();
  let done = false;
  try {
    for (;;) {
      let step: IteratorResult<T>;
      try {
        step = await iterator.next();
      } catch (err) {
        done = true;
        throw toError(err);
      }
      if (step.done) {
        done = true;
        return;
      }
      yield step.value;
    }
  } finally {
    // The consumer stopped early (it threw or broke out): let the source clean up as for-await would.
    if (!done) await iterator.return?.();
  }
}
