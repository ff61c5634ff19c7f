/**
 * The address space (`ulimit -v`, RLIMIT_AS) `decide serve`, `decide batch` and `decide worker`
 * need, and the check that refuses to start below it. Under a tighter limit the process cannot hold
 * its threads: V8 ends the whole process ("Fatal process OOM ... CodeRange", exit 133) when a
 * thread's isolate cannot reserve its memory, which nothing can catch. So the limit is read at the
 * start, where the platform tells it (Linux: /proc/self/limits), and a short one refused with the
 * figure it needs.
 *
 * Measured on Linux x64 (Node 20, 2 cores, CPU provider, svc-alpha-2026-10):
 * `decide serve` with its default model (created in an empty models folder, and installed), a 500
 * KB request body and a server batch with 500 KB lines peaked at 3,197,960-3,286,084 kB of address
 * space (--threads 1 and 2); it died at `ulimit -v 3000000` and ran at 3250000. `decide batch` with
 * 500 KB lines peaked at 2,557,504 kB; it died at 2300000 and ran at 2600000. `decide worker`
 * (Postgres store, measured on its own, not taken from serve: it loads what batch does plus the
 * Postgres client) on a job of 500 KB lines peaked at 13,152,124-13,255,524 kB (--threads 1 and 2);
 * it died at 12250000-13000000 (V8's CodeRange or heap reservations, or `Cannot allocate Wasm
 * memory`) and ran at 13500000. Most of it is one reservation: the `pg` module touches `Response`
 * at load, which on Node 20 loads Node's HTTP client (undici), whose llhttp WebAssembly instance
 * reserves about 10 GiB (its memory's guard regions). The figures below add about a quarter. Most
 * of that space is reserved, not used (thread stacks, malloc's per-thread arenas, V8's heap and
 * code reservations), so more cores and --threads need more; a limit above these figures that still
 * cannot hold the threads fails at the start too (the server starts its reader threads before it
 * listens; a worker loads a model's threads with its first chunk of it), only without this message.
 */
import { readFileSync } from 'node:fs';

/**
 * MiB of address space each command needs at least. `decide serve` with the Postgres store
 * (DECIDE_DATABASE_URL) loads the Postgres client, and with it the reservation above, so it needs
 * the worker's figure: measured (2026-11-27, Linux x64, Node 20, 2 cores, --threads 1) it died at
 * `ulimit -v 5000000` (WebAssembly.instantiate(): Out of memory, from undici's llhttp) and at
 * 14000000 (V8's CodeRange), and started and served at 16777216.
 */
export const ADDRESS_SPACE_NEEDED_MIB = { serve: 4096, servePostgres: 16384, batch: 3072, worker: 16384 } as const;

/** This process's soft address-space limit in bytes; undefined when unlimited or the platform does not tell. */
export function addressSpaceLimit(limitsFile = '/proc/self/limits'): number | undefined {
  let text: string;
  try {
    text = readFileSync(limitsFile, 'utf8');
  } catch {
    return undefined;
  }
  const soft = /^Max address space\s+(\S+)/m.exec(text)?.[1];
  return soft === undefined || soft === 'unlimited' ? undefined : Number(soft);
}

/** Why `command` cannot run under this process's address-space limit, or undefined when it can (or the limit is unknown). */
export function addressSpaceProblem(command: keyof typeof ADDRESS_SPACE_NEEDED_MIB): string | undefined {
  const limit = addressSpaceLimit();
  const needed = ADDRESS_SPACE_NEEDED_MIB[command];
  if (limit === undefined || limit >= needed * 1024 * 1024) return undefined;
  return (
    `not enough address space: it needs at least ${needed} MiB (ulimit -v); this process has ` +
    `${Math.floor(limit / (1024 * 1024))} MiB (ulimit -v ${Math.floor(limit / 1024)}): raise the limit to ` +
    `ulimit -v ${needed * 1024} or more, or unlimited`
  );
}
