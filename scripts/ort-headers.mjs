// Prints the directory of the ONNX Runtime C/C++ API headers the addon compiles against
// (ORT_API_VERSION 29, ONNX Runtime 1.29); CMakeLists.txt runs it. The headers come from a registry
// package at build time, never from this repository: the npm registry's only package that carries
// them is the Unity plugin `com.github.asus4.onnxruntime` (MIT; the C/C++ API headers are the same
// on every platform, we take the ios-arm64 framework's copy, named exactly). In order:
// 1. DECIDE_ORT_INCLUDE_DIR, when set (any ONNX Runtime >= 1.29 include directory);
// 2. the plugin installed as a devDependency (this repository after `npm ci`);
// 3. else (a dependent building from source because no prebuilt addon fits its platform): the
//    plugin's tarball fetched once with `npm pack` (no install script runs) into a cache folder,
//    keeping only the headers. Where the package's prebuilt addon loads, none of this runs.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE = 'com.github.asus4.onnxruntime';
const VERSION = '0.4.9';
const HEADERS = 'Plugins/iOS~/onnxruntime.xcframework/ios-arm64/onnxruntime.framework/Headers';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const hasHeaders = (dir) => existsSync(path.join(dir, 'onnxruntime_cxx_api.h'));

function fromEnv() {
  const dir = process.env.DECIDE_ORT_INCLUDE_DIR;
  if (!dir) return undefined;
  if (!hasHeaders(dir)) throw new Error(`DECIDE_ORT_INCLUDE_DIR=${dir} has no onnxruntime_cxx_api.h`);
  return dir;
}

function fromInstalled() {
  try {
    const pkg = path.dirname(createRequire(path.join(root, 'package.json')).resolve(`${PACKAGE}/package.json`));
    const dir = path.join(pkg, HEADERS);
    return hasHeaders(dir) ? dir : undefined;
  } catch {
    return undefined;
  }
}

function fromRegistry() {
  const cacheRoot = process.env.DECIDE_CACHE_DIR ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'decision-engine');
  const dir = path.join(cacheRoot, `ort-headers-${VERSION}`);
  if (hasHeaders(dir)) return dir;
  mkdirSync(cacheRoot, { recursive: true });
  const scratch = mkdtempSync(path.join(cacheRoot, 'ort-headers-'));
  try {
    process.stderr.write(`decision-engine: fetching the ONNX Runtime headers (npm pack ${PACKAGE}@${VERSION}, about 100 MB, once)\n`);
    execFileSync('npm', ['pack', '--silent', `${PACKAGE}@${VERSION}`], { cwd: scratch, stdio: ['ignore', 'ignore', 'inherit'] });
    const tarball = readdirSync(scratch).find((f) => f.endsWith('.tgz'));
    if (!tarball) throw new Error(`npm pack ${PACKAGE}@${VERSION} wrote no tarball`);
    execFileSync('tar', ['-xzf', tarball, '--wildcards', `package/${HEADERS}/*.h`], { cwd: scratch, stdio: 'inherit' });
    // Renamed into place whole, so a concurrent or killed build never sees half a directory.
    rmSync(dir, { recursive: true, force: true });
    renameSync(path.join(scratch, 'package', HEADERS), dir);
    return dir;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

try {
  const dir = fromEnv() ?? fromInstalled() ?? fromRegistry();
  process.stdout.write(dir);
} catch (err) {
  process.stderr.write(`decision-engine: cannot find the ONNX Runtime headers: ${err.message}\n` +
    `Set DECIDE_ORT_INCLUDE_DIR to an ONNX Runtime (>= 1.29) include directory, or allow npm to reach the registry.\n`);
  process.exit(1);
}
