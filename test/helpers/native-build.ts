/**
 * Tests never run an addon older than native/: the global setup compares the SHA-256 of the native
 * sources (native/ and CMakeLists.txt) with the stamp written beside build/Release/decide_native.node
 * after the last build it saw succeed. On a mismatch (or no stamp, or no addon) it runs `npm run
 * build:native` (incremental: seconds when nothing changed) and stamps the result; a failed build
 * stops the run with the reason instead of testing the old addon.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { ADDON, nativeSourcesHash, ROOT, STAMP } from '../../scripts/native-stamp.mjs';

// The hash and the stamp's place are shared with `npm run build:native`, which writes the stamp.
export { nativeSourcesHash };

/** Why the addon needs a build, or undefined when it matches the sources. */
export function staleAddonReason(want = nativeSourcesHash()): string | undefined {
  if (!existsSync(ADDON)) return `${path.relative(ROOT, ADDON)} does not exist`;
  const have = existsSync(STAMP) ? readFileSync(STAMP, 'utf8').trim() : undefined;
  if (have === undefined) return 'no build stamp says which sources it was built from';
  if (have !== want) return 'native/ or CMakeLists.txt changed since it was built';
  return undefined;
}

export async function ensureCurrentAddon(): Promise<void> {
  const want = nativeSourcesHash();
  const reason = staleAddonReason(want);
  if (reason === undefined) return;
  process.stderr.write(`test setup: rebuilding the native addon (${reason}): npm run build:native\n`);
  try {
    await promisify(execFile)('npm', ['run', 'build:native'], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `the native addon is stale (${reason}) and \`npm run build:native\` failed, so the tests would run an old addon; ` +
        `fix the build and run it again:\n${e.stderr || e.stdout || e.message}`,
    );
  }
  writeFileSync(STAMP, `${want}\n`);
}
