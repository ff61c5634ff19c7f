// The package's `install` script: makes sure the native addon can be loaded here.
// 1. An addon already built in build/Release (this repository after `npm run build:native`): done.
// 2. The prebuilt addon shipped for this platform (prebuilds/<platform>-<arch>/) loads: done.
// 3. Else build it from native/ with cmake-js (needs a C++17 compiler and cmake), as
//    better-sqlite3 does when it has no prebuilt binary.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const built = path.join(root, 'build', 'Release', 'decide_native.node');
const prebuilt = path.join(root, 'prebuilds', `${process.platform}-${process.arch}`, 'decide_native.node');

/** Why `addon` does not load here (undefined: it loads). */
function loadProblem(addon) {
  // A child process, so that a binary this platform cannot load (an older glibc, say) fails there.
  const probe = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(addon)})`], { encoding: 'utf8' });
  if (probe.status === 0) return undefined;
  const lines = `${probe.stderr ?? ''}`.split('\n').map((l) => l.trim());
  return lines.find((l) => /^Error:/.test(l)) ?? (probe.signal ? `loading it was killed by ${probe.signal}` : `exit ${probe.status}`);
}

if (existsSync(built)) process.exit(0);
const problem = existsSync(prebuilt) ? loadProblem(prebuilt) : `no prebuilt addon for ${process.platform}-${process.arch}`;
if (problem === undefined) process.exit(0);

const cmakeJs = createRequire(import.meta.url).resolve('cmake-js/bin/cmake-js');
console.log(`decision-engine: ${existsSync(prebuilt) ? `the prebuilt addon does not load here (${problem})` : problem}; building it from source (cmake-js)`);
// The addon alone: the C++ unit tests are this repository's, not a dependent's.
const build = spawnSync(process.execPath, [cmakeJs, 'compile', '--CDCMAKE_BUILD_TYPE=Release', '--target', 'decide_native'], { cwd: root, stdio: 'inherit' });
if (build.status !== 0) {
  console.error(
    'decision-engine: building the native addon failed. It needs a C++17 compiler, cmake and python3 ' +
      '(Debian: apt-get install build-essential cmake python3). Then run `npm rebuild decision-engine`.',
  );
  process.exit(build.status ?? 1);
}
