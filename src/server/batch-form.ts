/**
 * The batch creation form (multipart: model, file, optional questions), read once for the routes
 * that take it: POST /v1/batches creates a job from it, POST /v1/batches/validate checks its records.
 * The file part is streamed to a staging file (BatchService.stageUpload), never buffered whole.
 */
import { isUtf8 } from 'node:buffer';

import type { FastifyRequest } from 'fastify';

import { ApiError } from '../api/errors.js';
import type { BatchService, StagedUpload } from '../batches/batch-service.js';
import { FILE_SENT_AS_TEXT, formParts, partName, readingMultipart, type PartHead } from './multipart-body.js';

/** The questions form field, in bytes. */
export const MAX_QUESTIONS_FIELD_BYTES = 1024 * 1024;

export interface BatchForm {
  model: string | undefined;
  questions: string | undefined;
  /** The staged file; the caller hands it to create()/validate(), which consume it. */
  upload: StagedUpload | undefined;
}

/**
 * A small file part as UTF-8 text: 413 state_too_long over `limit` bytes (the rest is drained),
 * 400 invalid_question when its bytes are not UTF-8 (as a /v1/decide body), never U+FFFD in
 * their place.
 */
async function readSmallPart(stream: AsyncIterable<Buffer>, limit: number, name: string): Promise<string> {
  const pieces: Buffer[] = [];
  let bytes = 0;
  for await (const piece of stream) {
    bytes += piece.length;
    if (bytes <= limit) pieces.push(piece);
  }
  if (bytes > limit) throw new ApiError('state_too_long', `form field '${name}': longer than ${limit} bytes`);
  const body = Buffer.concat(pieces);
  if (!isUtf8(body)) throw new ApiError('invalid_question', `form field '${name}': not valid UTF-8`);
  return body.toString('utf8');
}

/** A part the form does not take: a file other than `file`, or a text field other than `model`. */
function unknownPart({ name, file }: PartHead): ApiError {
  return file
    ? new ApiError('invalid_question', `form field '${name.slice(0, 100)}': unexpected file (send the JSONL as the field "file", once)`)
    : new ApiError('invalid_question', `form field '${name.slice(0, 100)}': unknown (allowed: model, file, questions)`);
}

/** Reads the form (400 invalid_question for anything but model, file, questions, each once). */
export async function readBatchForm(request: FastifyRequest, batches: BatchService): Promise<BatchForm> {
  if (!request.isMultipart()) {
    throw new ApiError('invalid_question', 'request body: send multipart/form-data with the fields model and file (and optionally questions)');
  }
  let model: string | undefined;
  let questions: string | undefined;
  let upload: StagedUpload | undefined;
  try {
    const parts = formParts(
      request,
      {
        limits: { files: 3, fields: 4, parts: 6, fieldSize: MAX_QUESTIONS_FIELD_BYTES, fileSize: batches.maxFileBytes + 1 },
        // `questions` arrives as a file part however it was sent (`-F questions=...` or `-F
        // questions=@q.json`): busboy decodes a text field leniently, invalid UTF-8 becoming U+FFFD,
        // and the questions the model reads must be refused for that as a /v1/decide body is. The
        // rest is busboy's own rule: a part with a filename or of type application/octet-stream.
        isPartAFile: (name, type, filename) => name === 'questions' || filename !== undefined || type === 'application/octet-stream',
        // Our own count gives the 413 (with the limit in the message); busboy only stops the bytes.
        ...({ throwFileSizeLimit: false } as object),
      },
      { unknownPart },
    );
    const once = (name: string, seen: unknown) => {
      if (seen !== undefined) throw new ApiError('invalid_question', `form field '${name}': given more than once; send it once`);
    };
    for await (const part of parts) {
      const name = partName(part);
      if (part.type === 'file' && name === 'questions') {
        once('questions', questions);
        questions = await readSmallPart(readingMultipart(part.file), MAX_QUESTIONS_FIELD_BYTES, 'questions');
        continue;
      }
      if (part.type === 'file') {
        if (name !== 'file' || upload) {
          part.file.resume();
          throw unknownPart({ name, file: true });
        }
        upload = await batches.stageUpload(readingMultipart(part.file));
        continue;
      }
      const value = part.value;
      if (part.valueTruncated) {
        throw new ApiError('state_too_long', `form field '${name.slice(0, 100)}': longer than ${MAX_QUESTIONS_FIELD_BYTES} bytes`);
      }
      if (typeof value !== 'string') {
        throw new ApiError('invalid_question', `form field '${name.slice(0, 100)}': must be text`);
      }
      if (name === 'file') throw new ApiError('invalid_question', FILE_SENT_AS_TEXT);
      if (name === 'model') {
        once('model', model);
        model = value;
      } else throw unknownPart({ name, file: false });
    }
  } catch (err) {
    await batches.discard(upload);
    throw err;
  }
  return { model, questions, upload };
}
