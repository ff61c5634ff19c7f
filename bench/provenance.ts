/**
 * Where a bench run's numbers come from: the package root, the git commit, the native addon the
 * engine loaded (the tree may be shared and rebuilt mid-run), and the machine.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { cpuInt8Support } from '../src/engine/cpu-int8.js';
import { nativeAddonPath } from '../src/engine/native.js';
import type { BenchReport } from './report.js';

export function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json')) || !existsSync(path.join(dir, 'CMakeLists.txt'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('bench: cannot find the package root');
    dir = parent;
  }
  return dir;
}

export function gitInfo(root: string): { commit: string; dirty: boolean | null } {
  try {
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const status = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return { commit, dirty: status.trim().length > 0 };
  } catch {
    return { commit: 'unknown', dirty: null };
  }
}

/** Identity of the native addon the engine loaded (the tree is shared: it may be rebuilt mid-run). */
export function addonInfo(root: string): { path: string; sha256: string; mtime: string } {
  // The file the engine loads (DECIDE_NATIVE_ADDON, the local build or the prebuilt one), so an A/B
  // of two builds reports each.
  const file = nativeAddonPath() ?? path.join(root, 'build', 'Release', 'decide_native.node');
  try {
    return { path: file, sha256: createHash('sha256').update(readFileSync(file)).digest('hex'), mtime: statSync(file).mtime.toISOString() };
  } catch {
    return { path: file, sha256: 'unknown', mtime: 'unknown' };
  }
}

/** The machine the run is on, with the load average taken at the start. */
export function machineInfo(loadAverageAtStart: number[]): BenchReport['machine'] {
  return {
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    int8DotProduct: cpuInt8Support()?.flags ?? null,
    cores: os.availableParallelism(),
    memoryBytes: os.totalmem(),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    loadAverageAtStart,
  };
}
