/**
 * Uploads: a JSONL upload streamed to a staging file under `<jobsDir>/.staging`, counted and
 * fsynced, then moved into its job's directory (or its file's). A crash before the move leaves only
 * a staging file, removed at the next start (clear()). Staged files are 0600 in a 0700 dir
 * (private-files.ts).
 */
import { createReadStream } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';

import { monotonicFactory } from 'ulid';

import { ApiError } from '../api/errors.js';
import { inputLines } from './input-lines.js';
import type { BatchInput, StagedUpload } from './ports.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, privateDir } from './private-files.js';
import { RecordCounter } from './jsonl-lines.js';

export type { StagedUpload };

export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export class UploadStaging {
  private readonly newId = monotonicFactory();

  constructor(
    readonly dir: string,
    private readonly limits: { maxFileBytes: number; maxRecords: number },
  ) {}

  /** Removes every staged file (crash leftovers); call at start, before any upload. */
  async clear(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
    privateDir(this.dir);
  }

  /**
   * Streams an upload to a staging file, counting records, and fsyncs it. Enforces the size and
   * record limits (413 state_too_long); the stream is read to its end either way, so an HTTP
   * client gets the error response rather than a reset connection.
   */
  async stage(stream: AsyncIterable<Buffer | string>): Promise<StagedUpload> {
    const { maxFileBytes, maxRecords } = this.limits;
    const file = path.join(this.dir, `${this.newId()}.jsonl`);
    const fh = await open(file, 'wx', PRIVATE_FILE_MODE);
    const counter = new RecordCounter();
    let over: ApiError | undefined;
    let position = 0;
    try {
      for await (const piece of stream) {
        if (over) continue;
        const chunk = typeof piece === 'string' ? Buffer.from(piece) : piece;
        counter.push(chunk);
        if (counter.bytes > maxFileBytes) {
          over = new ApiError('state_too_long', `file: larger than the limit of ${maxFileBytes} bytes; split it into several batches`);
        } else if (counter.records > maxRecords) {
          over = new ApiError('state_too_long', `file: more than the limit of ${maxRecords} records; split it into several batches`);
        } else {
          let done = 0;
          while (done < chunk.length) {
            const { bytesWritten } = await fh.write(chunk, done, chunk.length - done, position);
            done += bytesWritten;
            position += bytesWritten;
          }
        }
      }
      if (!over && counter.total() > maxRecords) {
        over = new ApiError('state_too_long', `file: more than the limit of ${maxRecords} records; split it into several batches`);
      }
      if (over) throw over;
      await fh.sync();
    } catch (err) {
      await fh.close().catch(() => undefined);
      await rm(file, { force: true });
      throw err;
    }
    await fh.close();
    return { path: file, bytes: counter.bytes, records: counter.total() };
  }

  /** Removes a staged upload that will not become a job. */
  async discard(upload: StagedUpload | undefined): Promise<void> {
    if (upload) await rm(upload.path, { force: true });
  }
}

/**
 * Makes `target` exist in a new private directory, durably: `put` writes it (the file's own bytes
 * durable), then the new directory and its parent are fsynced.
 */
export async function placeInNewDir(target: string, put: () => Promise<void>): Promise<void> {
  const dir = path.dirname(target);
  await mkdir(dir, { mode: PRIVATE_DIR_MODE });
  await put();
  await fsyncDir(dir);
  await fsyncDir(path.dirname(dir));
}

/**
 * Moves a staged upload to `target` (in a new directory) durably: the file, and the directories it
 * left and entered, fsynced.
 */
export async function moveUploadInto(upload: StagedUpload, target: string): Promise<void> {
  await placeInNewDir(target, () => rename(upload.path, target));
  await fsyncDir(path.dirname(upload.path));
}

/** A staged upload as a job's input (our multipart form: creation checks no line). */
export function stagedInput(upload: StagedUpload, maxRecordBytes: number): BatchInput {
  return {
    bytes: upload.bytes,
    records: upload.records,
    checked: false,
    lines: () => inputLines(createReadStream(upload.path, { highWaterMark: 1 << 20 }), { maxRecordBytes }),
    placeAt: (target) => moveUploadInto(upload, target),
  };
}
