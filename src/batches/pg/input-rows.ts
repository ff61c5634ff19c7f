/**
 * A job's input into Postgres at create time: every non-blank line becomes one row of
 * decide_batch_inputs (its bytes as uploaded, so a line that is not UTF-8 or JSON still gets its
 * failed result row from the worker), numbered by record index, and the records are cut into chunks
 * of the configured size. The API host that created the job keeps nothing: any worker can take any
 * chunk.
 *
 * custom_id uniqueness spans the whole file, not one chunk: each row records the line that first
 * claimed its custom_id when an earlier line did (dup_of_line, from input-lines.ts), so a worker can
 * rebuild exactly the claims parseRecord() would have seen from the lines before its chunk.
 */
import type { ChunkOptions, InputLine } from '../ports.js';
import type { Client } from './database.js';
import type { ChunkTask } from './queue.js';

/** Rows per INSERT statement. */
const INSERT_ROWS = 1000;

/**
 * Inserts the input's lines as input rows of `jobId` (inside the caller's transaction) and returns
 * its chunks, in input order, and the number of records.
 */
export async function insertInputRows(
  client: Client,
  jobId: string,
  lines: AsyncIterable<InputLine>,
  chunking: Pick<ChunkOptions, 'chunkRecords' | 'chunkBytes'>,
): Promise<{ chunks: ChunkTask[]; records: number }> {
  const chunks: ChunkTask[] = [];
  let pending: InputLine[] = [];
  let idx = 0;
  let chunkStart = 0;
  let chunkBytes = 0;
  const flush = async () => {
    if (pending.length === 0) return;
    const first = idx - pending.length;
    await client.query(
      `INSERT INTO decide_batch_inputs (job_id, idx, line_no, length, body, dup_of_line)
       SELECT $1, $2::integer + ord - 1, line_no, length, body, dup_of_line
       FROM unnest($3::integer[], $4::integer[], $5::bytea[], $6::integer[]) WITH ORDINALITY AS t (line_no, length, body, dup_of_line, ord)`,
      [jobId, first, pending.map((r) => r.lineNo), pending.map((r) => r.length), pending.map((r) => r.bytes), pending.map((r) => r.dupOfLine)],
    );
    pending = [];
  };
  const closeChunk = () => {
    if (idx > chunkStart) chunks.push({ job: jobId, chunk: chunks.length, from: chunkStart, to: idx });
    chunkStart = idx;
    chunkBytes = 0;
  };
  for await (const line of lines) {
    pending.push(line);
    idx += 1;
    chunkBytes += line.length;
    if (idx - chunkStart >= chunking.chunkRecords || chunkBytes >= chunking.chunkBytes) closeChunk();
    if (pending.length >= INSERT_ROWS) await flush();
  }
  closeChunk();
  await flush();
  return { chunks, records: idx };
}
