/**
 * The benchmark's scratch folders in the system's temp folder (the peak probe's MatMul graph, the
 * ORT profile, the HTTP latency's models dir): named `decide-bench-<pid>-<kind>-…`, so that Ctrl-C
 * or SIGTERM of `decide bench` removes its own (removeOwnScratch) and whoever started a bench that
 * could not clean up (killed with SIGKILL: `decide gpu-report` at a step's time limit) removes what
 * the gone process left (removeLeftoverScratch).
 */
import { readdirSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { removeLeftovers } from '../src/models/output-dir.js';

const PREFIX = 'decide-bench-';

/** A new scratch folder of this process, `kind` naming what it holds. */
export function makeScratch(kind: string): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), `${PREFIX}${process.pid}-${kind}-`));
}

/** Removes every scratch folder of this process, at once (a signal handler's last act before it exits). */
export function removeOwnScratch(): void {
  const own = `${PREFIX}${process.pid}-`;
  let entries: string[] = [];
  try {
    entries = readdirSync(os.tmpdir());
  } catch {
    return;
  }
  for (const name of entries) if (name.startsWith(own)) rmSync(path.join(os.tmpdir(), name), { recursive: true, force: true, maxRetries: 3 });
}

/** Removes the scratch folders whose process is gone. */
export function removeLeftoverScratch(): Promise<void> {
  return removeLeftovers(os.tmpdir(), PREFIX, /^(\d+)-/);
}
