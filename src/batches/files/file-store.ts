/**
 * FileStore: where uploaded files (OpenAI's `POST /v1/files`, purpose `batch`) live. Two
 * implementations, chosen like the batch store by DECIDE_DATABASE_URL (open-files.ts):
 *   sqlite-files.ts  rows in `<dataDir>/batches.sqlite`, bytes in `<dataDir>/files/<id>/content.jsonl`
 *   pg-files.ts      rows and bytes (in parts of at most 1 MiB) in Postgres, so a file uploaded on
 *                    one API host is read on any other
 * Uploads arrive as a staged upload (streamed to disk and counted by UploadStaging, with the batch
 * file limits) and are consumed by create(); neither an upload nor a download is held whole in memory.
 */
import type { Readable } from 'node:stream';

import type { StagedUpload } from '../uploads.js';

export interface StoredFile {
  /** `file-<ULID>`. */
  id: string;
  /** The API key id that uploaded it. */
  owner: string;
  filename: string;
  purpose: string;
  bytes: number;
  /** Non-blank lines. */
  records: number;
  /** Epoch milliseconds. */
  createdAt: number;
  /** Epoch milliseconds after which the file is gone (OpenAI's `expires_after`); null: kept until deleted. */
  expiresAt: number | null;
}

/** A file's row as both stores' SQL returns it (snake_case columns, numbers as numbers). */
export type StoredFileRow = Omit<StoredFile, 'createdAt' | 'expiresAt'> & { created_at: number; expires_at: number | null };

export function storedFileFromRow(r: StoredFileRow): StoredFile {
  return {
    id: r.id,
    owner: r.owner,
    filename: r.filename,
    purpose: r.purpose,
    bytes: r.bytes,
    records: r.records,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
  };
}

/** Whether the file has expired at `now` (the sweep may not have deleted it yet: it is gone all the same). */
export function isExpired(file: StoredFile, now: number): boolean {
  return file.expiresAt !== null && file.expiresAt <= now;
}

/**
 * A file deleted (or expired and swept) while it was being read: its stream fails with this instead
 * of ending early, so neither a download nor a batch made from it is ever silently cut short.
 */
export class FileGoneError extends Error {
  constructor(readonly fileId: string) {
    super(`file ${fileId} was deleted while it was being read`);
  }
}

export interface FileStore {
  create(file: StoredFile, upload: StagedUpload): Promise<StoredFile>;
  get(id: string): Promise<StoredFile | undefined>;
  /**
   * The owner's files not expired at `now`, by id (= upload order): `desc` newest first; `after` is
   * the last id of the previous page.
   */
  list(owner: string, limit: number, order: 'asc' | 'desc', now: number, after?: string): Promise<StoredFile[]>;
  /** The file's bytes, streamed; the stream fails with FileGoneError when the file is deleted under it. */
  open(file: StoredFile): Promise<Readable>;
  /** False when there was no such file. */
  delete(id: string): Promise<boolean>;
  /** Deletes the files expired at `now`, bytes and all; returns their ids. */
  deleteExpired(now: number): Promise<string[]>;
  close(): Promise<void>;
}
