/**
 * A SQLite job's result rows read back: all of them (the results file up to its committed length),
 * or those of one status (OpenAI's output or error file), picked by the job's status file, one byte
 * per row written with the rows (runner.ts). A split download finds the line ends and reads no
 * row's JSON; its length is the job row's `failed_bytes` (or the rest), known before reading.
 *
 * A job written before statuses were kept has no status file: reindexOldJobs() writes it once, at
 * open, from the rows themselves.
 */
import { open, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';

import { rowFailed } from '../openai/lines.js';
import { resultRowsBytes, type BatchResults, type ResultRows } from '../ports.js';
import { PRIVATE_FILE_MODE } from '../private-files.js';
import { ROW_ANSWERED, ROW_FAILED } from '../runner.js';
import type { JobRow, SqliteJobTable } from './sqlite-jobs.js';

/** Bytes read from the results file at a time. */
const READ_BYTES = 1 << 20;

/** The committed lines of a results file, each with its newline, in order (the file is opened before the first read). */
async function* committedLines(file: string, bytes: number): AsyncGenerator<Buffer> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(READ_BYTES);
    let rest: Buffer = Buffer.alloc(0);
    for (let position = 0; position < bytes; ) {
      const { bytesRead } = await fh.read(buf, 0, Math.min(buf.length, bytes - position), position);
      if (bytesRead === 0) throw new Error(`${file}: ${position} of ${bytes} committed bytes found`);
      position += bytesRead;
      const piece = rest.length > 0 ? Buffer.concat([rest, buf.subarray(0, bytesRead)]) : buf.subarray(0, bytesRead);
      let at = 0;
      for (let nl = piece.indexOf(0x0a, at); nl !== -1; nl = piece.indexOf(0x0a, at)) {
        yield Buffer.from(piece.subarray(at, nl + 1));
        at = nl + 1;
      }
      rest = Buffer.from(piece.subarray(at));
    }
    if (rest.length > 0) yield rest;
  } finally {
    await fh.close();
  }
}

/** The job's committed result rows, all or those of one status. */
export async function openResultRows(dataDir: string, job: JobRow, rows: ResultRows): Promise<BatchResults> {
  const bytes = resultRowsBytes(job, rows);
  if (bytes === 0) return { stream: Readable.from([]), bytes: 0 };
  if (rows === 'all') {
    // Opened before streaming, so a sweep that deletes the file meanwhile cannot cut the download.
    const fh = await open(path.join(dataDir, job.resultsPath), 'r');
    return { stream: fh.createReadStream({ start: 0, end: job.resultsBytes - 1, autoClose: true }), bytes };
  }
  const statusFile = await open(path.join(dataDir, job.statusPath), 'r');
  const count = job.completed + job.failed;
  let statuses: Buffer;
  try {
    statuses = Buffer.alloc(count);
    const { bytesRead } = await statusFile.read(statuses, 0, count, 0);
    if (bytesRead < count) throw new Error(`batch ${job.id}: ${bytesRead} row statuses found for ${count} committed rows`);
  } finally {
    await statusFile.close();
  }
  const wanted = rows === 'failed' ? ROW_FAILED : ROW_ANSWERED;
  const lines = committedLines(path.join(dataDir, job.resultsPath), job.resultsBytes);
  // The results file is opened by the first read: do it now, so a sweep between this call and the
  // download cannot take it away.
  const first = await lines.next();
  async function* picked(): AsyncGenerator<Buffer> {
    let index = 0;
    let out: Buffer[] = [];
    let held = 0;
    for (let next = first; !next.done; next = await lines.next()) {
      if (statuses[index++] === wanted) {
        out.push(next.value);
        held += next.value.length;
        if (held >= READ_BYTES) {
          yield Buffer.concat(out, held);
          out = [];
          held = 0;
        }
      }
    }
    if (held > 0) yield Buffer.concat(out, held);
  }
  return { stream: Readable.from(picked(), { objectMode: false }), bytes };
}

/**
 * Writes the status file and failed_bytes of every job of an older database that has none, from
 * its committed rows (each parsed this once). Jobs without results get an empty one.
 */
export async function reindexOldJobs(table: SqliteJobTable, dataDir: string, log: (line: string) => void): Promise<void> {
  for (const job of table.withoutRowStatuses()) {
    const statuses: number[] = [];
    let failedBytes = 0;
    if (job.status !== 'expired' && job.resultsBytes > 0) {
      for await (const line of committedLines(path.join(dataDir, job.resultsPath), job.resultsBytes)) {
        const failed = rowFailed(line.toString('utf8'));
        statuses.push(failed ? ROW_FAILED : ROW_ANSWERED);
        if (failed) failedBytes += line.length;
      }
      await writeFile(path.join(dataDir, job.statusPath), Buffer.from(statuses), { mode: PRIVATE_FILE_MODE, flush: true });
    }
    table.setFailedBytes(job.id, failedBytes);
    if (statuses.length > 0) log(`batch ${job.id}: row statuses recorded for ${statuses.length} rows (a job of an older version)`);
  }
}
