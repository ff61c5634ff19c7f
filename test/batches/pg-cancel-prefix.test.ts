/**
 * Postgres: a cancelled job's results are exactly the first n records, whatever order the chunks
 * committed in. Two working stores on one database (two workers, two chunk loops each) and one
 * chunk held back in the engine call while the chunks after it commit: the cancel must not expose
 * the rows past the held chunk (they have no rows before them), and the held chunk's late commit
 * is dropped. Also: chunks of a job are queued with a fetch priority in input order, since all of
 * them share one created_on and pg-boss orders by (priority, created_on) only.
 *
 * The hold is a gate in front of the real service (real engine, real Postgres, real pg-boss): the
 * one way to make "chunk k+1 commits before chunk k" happen every run rather than sometimes.
 */
import path from 'node:path';
import { Readable } from 'node:stream';

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BatchService, type BatchDecisionService } from '../../src/batches/batch-service.js';
import type { DecisionService } from '../../src/service/decision-service.js';
import type { TestPostgres } from '../helpers/postgres.js';
import { closePgWorkspace, goodLines, openPgWorkspace, parseRows, streamText } from './helpers.js';

const CHUNK_RECORDS = 4;
const CHUNKS = 24;
/** The chunk whose engine call is held until the job is cancelled. */
const HELD_CHUNK = 2;
const HOLD_MARK = 'HOLD-THIS-CHUNK';

let workDir: string;
let modelsDir: string;
let svc: DecisionService;
let postgres: TestPostgres;

beforeAll(async () => {
  ({ workDir, modelsDir, svc, postgres } = await openPgWorkspace('batch-pg-prefix'));
}, 120_000);

afterAll(async () => {
  await closePgWorkspace({ workDir, svc, postgres });
});

async function until(what: string, check: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('Postgres cancel keeps exactly the committed prefix', () => {
  it('two workers, chunk 2 held while later chunks commit: the results are records 0..7 and the counts say so', async () => {
    const url = await postgres.database('cancel_prefix');
    let heldReached = false;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const gated: BatchDecisionService = {
      resolveModel: (id) => svc.resolveModel(id),
      runtime: (id) => svc.runtime(id),
      async decideRecords(model, requests, priority) {
        if (requests.some((r) => r.stateText.includes(HOLD_MARK))) {
          heldReached = true;
          await released;
        }
        return svc.decideRecords(model, requests, priority);
      },
    };
    const lines = goodLines(CHUNKS * CHUNK_RECORDS, 11, 'p');
    const held = JSON.parse(lines[HELD_CHUNK * CHUNK_RECORDS]!) as { state: string };
    held.state = `${HOLD_MARK} ${held.state}`;
    lines[HELD_CHUNK * CHUNK_RECORDS] = JSON.stringify(held);

    // The API host creates without working, so every chunk is queued before any worker fetches.
    const host = await BatchService.open({ service: gated, dataDir: path.join(workDir, 'host'), databaseUrl: url, resume: false, chunk: { chunkRecords: CHUNK_RECORDS } });
    const workers: BatchService[] = [];
    try {
      const job = await host.create({ owner: 'o', model: 'svc-alpha', upload: await host.stageUpload(Readable.from([lines.join('\n')])) });

      // Queued in input order: each chunk's fetch priority is below the one before it.
      const db = new pg.Client({ connectionString: url });
      await db.connect();
      try {
        const { rows } = await db.query<{ chunk: number; priority: number }>(
          `SELECT (data->>'chunk')::integer AS chunk, priority FROM decide_queue.job WHERE name = 'decide-batch-chunks' AND data->>'job' = $1 ORDER BY chunk`,
          [job.id],
        );
        expect(rows).toHaveLength(CHUNKS);
        for (let i = 1; i < rows.length; i++) expect(rows[i]!.priority).toBeLessThan(rows[i - 1]!.priority);
      } finally {
        await db.end();
      }

      for (let i = 0; i < 2; i++) {
        workers.push(await BatchService.open({ service: gated, dataDir: path.join(workDir, `worker-${i}`), databaseUrl: url, chunk: { chunkRecords: CHUNK_RECORDS } }));
      }
      // The held chunk is in its engine call and chunks after it have committed.
      const after = (HELD_CHUNK + 4) * CHUNK_RECORDS;
      await until('later chunks to commit past the held one', async () => {
        const b = await host.get('o', job.id);
        return heldReached && b.progress.completed + b.progress.failed >= after;
      });

      const cancelled = await host.cancel('o', job.id);
      expect(cancelled.status).toBe('cancelled');
      const prefix = HELD_CHUNK * CHUNK_RECORDS;
      expect(cancelled.progress.completed + cancelled.progress.failed).toBe(prefix);
      release();
      await Promise.all(workers.map((w) => w.whenIdle()));

      const final = await host.get('o', job.id);
      expect(final.status).toBe('cancelled');
      expect(final.progress.completed + final.progress.failed).toBe(prefix);
      const { stream, bytes } = await host.openResults('o', job.id);
      const body = await streamText(stream);
      expect(Buffer.byteLength(body)).toBe(bytes);
      const kept = parseRows(body);
      expect(kept.map((r) => r.custom_id)).toEqual(lines.slice(0, prefix).map((l) => (JSON.parse(l) as { custom_id: string }).custom_id));
      // The dropped rows took their tokens off the job's usage: it is the kept rows' sum.
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      const usage = await client.query('SELECT input_tokens::float8 AS input, output_tokens::float8 AS output FROM decide_batch_jobs WHERE id = $1', [job.id]).finally(() => client.end());
      const answered = kept.filter((r) => r.answers !== undefined);
      expect(usage.rows[0]).toEqual({
        input: answered.reduce((n, r) => n + r.usage!.input_tokens, 0),
        output: answered.reduce((n, r) => n + Object.keys(r.answers!).length, 0),
      });
    } finally {
      release();
      for (const w of workers) await w.close();
      await host.close();
    }
  }, 120_000);
});
