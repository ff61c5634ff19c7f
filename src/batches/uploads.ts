/**
 * Uploads: a JSONL upload streamed to a staging file under `<jobsDir>/.staging/<process>/`, counted
 * and fsynced, then moved into its job's directory (or its file's). A crash before the move leaves
 * only a staging file, in the folder of a process that is gone: the next start removes it
 * (clear()). Each process (each BatchService) stages in its own folder and holds a kernel lock in
 * it while it lives (file-lock.ts), so that a start never removes the uploads a live process is
 * receiving: a second server refused on a SQLite data dir, or API hosts of one Postgres store
 * sharing a data dir, in containers or not. Staged files are 0600 in 0700 dirs (private-files.ts).
 */
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';

import { monotonicFactory } from 'ulid';

import { ApiError } from '../api/errors.js';
import { inputLines } from './input-lines.js';
import type { BatchInput, StagedUpload } from './ports.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, privateDir } from './private-files.js';
import { tryLockFile } from './file-lock.js';
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

/** Staging folders opened by this process so far: each BatchService gets its own. */
let opened = 0;

/** In each staging folder: the kernel lock its process holds while it lives (file-lock.ts). */
const OWNER_LOCK = '.owner.lock';

export class UploadStaging {
  private readonly newId = monotonicFactory();
  /** This service's staging folder, under `root`. */
  readonly dir: string;
  private releaseOwner?: () => void;

  constructor(
    private readonly root: string,
    private readonly limits: { maxFileBytes: number; maxRecords: number },
  ) {
    this.dir = path.join(root, `${process.pid}-${Date.now()}-${++opened}`);
  }

  /**
   * Removes what processes that are gone left staged (crash leftovers, and the loose files of
   * versions that staged without folders), keeps the folders of live ones (their lock is held),
   * and makes this one's; call at start, before any upload.
   */
  async clear(): Promise<void> {
    privateDir(this.root);
    for (const entry of await readdir(this.root, { withFileTypes: true })) {
      const full = path.join(this.root, entry.name);
      if (!entry.isDirectory()) {
        await rm(full, { force: true });
        continue;
      }
      const owner = tryLockFile(path.join(full, OWNER_LOCK));
      if (!owner.held) continue;
      await rm(full, { recursive: true, force: true });
      owner.release();
    }
    privateDir(this.dir);
    const own = tryLockFile(path.join(this.dir, OWNER_LOCK));
    if (!own.held) throw new Error(`${this.dir}: its lock is held by process ${own.holder}`);
    this.releaseOwner = own.release;
  }

  /** Gives up this service's staging folder: removed when nothing is staged there (an upload still arriving keeps it). */
  async close(): Promise<void> {
    this.releaseOwner?.();
    this.releaseOwner = undefined;
    await rmdir(this.dir).catch(() => undefined);
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
