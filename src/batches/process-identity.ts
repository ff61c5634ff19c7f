/**
 * Which process wrote a lock file or a staging folder, told apart from a later process that got
 * the same pid: a restarted container's server is pid 1 every time, and a busy host reuses pids.
 * A process is named by its pid and its start time as Linux counts it (clock ticks since boot, in
 * /proc/<pid>/stat); where /proc is not there the start time is unknown and the pid alone says.
 */
import { readFileSync } from 'node:fs';

import { processAlive } from '../models/output-dir.js';

export interface ProcessIdentity {
  pid: number;
  /** Start time in clock ticks since boot; undefined where the system does not say. */
  start?: string;
}

/** The start time of `pid` (field 22 of /proc/<pid>/stat), or undefined. */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces and parentheses itself.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const start = fields[22 - 3];
    return start !== undefined && /^\d+$/.test(start) ? start : undefined;
  } catch {
    return undefined;
  }
}

let self: ProcessIdentity | undefined;

export function thisProcess(): ProcessIdentity {
  self ??= { pid: process.pid, start: startTimeOf(process.pid) };
  return self;
}

/** Whether the process `id` names is still running (not merely some process with its pid). */
export function isRunning(id: ProcessIdentity): boolean {
  if (!processAlive(id.pid)) return false;
  if (id.start === undefined) return true;
  const start = startTimeOf(id.pid);
  return start === undefined || start === id.start;
}

export function sameProcess(a: ProcessIdentity, b: ProcessIdentity): boolean {
  return a.pid === b.pid && (a.start === undefined || b.start === undefined || a.start === b.start);
}
