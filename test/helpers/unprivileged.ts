/**
 * For permission tests: root passes every permission check, so a check that a user may not read or
 * write somewhere runs the CLI as nobody. Where nobody cannot start the CLI at all (a folder above
 * the checkout closed to other users), there is no unprivileged user to run it as, and the test is
 * skipped saying so.
 */
import { execFileSync, spawnSync } from 'node:child_process';

import type { TestContext } from 'vitest';

/** Options for execFile/spawn that run as nobody when this process is root ({} otherwise); skips `ctx` where nobody cannot read `bin`. */
export function unprivilegedRun(ctx: TestContext, bin: string): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'nobody'], { encoding: 'utf8' }).trim());
  const user = { uid: id('-u'), gid: id('-g') };
  const reach = spawnSync(process.execPath, ['-e', 'require("fs").accessSync(process.argv[1], require("fs").constants.R_OK)', bin], user);
  ctx.skip(reach.status !== 0, `nobody cannot read ${bin} (a folder above it is closed to other users)`);
  return user;
}
