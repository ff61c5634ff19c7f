// Fills prebuilds/<platform>-<arch>/, which the npm package ships, so that where the package is
// installed on the same platform no compiler and no other download is needed:
// - the addon just built (build/Release/decide_native.node);
// - the ONNX Runtime library it loads at run time, copied from onnxruntime-node (a devDependency
//   here; MIT): on linux-x64 its 45 MB CUDA-capable core libonnxruntime.so.1. onnxruntime-node
//   itself is not a dependency of the package: it installs 288 MB (every platform's binaries) and
//   its postinstall downloads CUDA files from outside the npm registry.
// Runs in `prepare`, so `npm pack` and `npm publish` always carry the current build.
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const target = path.join(root, 'prebuilds', `${process.platform}-${process.arch}`);
mkdirSync(target, { recursive: true });
copyFileSync(path.join(root, 'build', 'Release', 'decide_native.node'), path.join(target, 'decide_native.node'));

/** The names onnxruntime-node gives its core library per platform (src/engine/native.ts looks for the same). */
const ORT_LIBRARY_NAMES = { win32: ['onnxruntime.dll'], darwin: ['libonnxruntime.1.dylib'] }[process.platform] ?? ['libonnxruntime.so.1'];

let ortDir;
try {
  const ortRoot = path.dirname(createRequire(path.join(root, 'package.json')).resolve('onnxruntime-node/package.json'));
  ortDir = path.join(ortRoot, 'bin', 'napi-v6', process.platform, process.arch);
} catch {
  console.error('prebuild: onnxruntime-node is not installed (run npm ci): the package would ship without ONNX Runtime');
  process.exit(1);
}
const names = ORT_LIBRARY_NAMES.filter((name) => existsSync(path.join(ortDir, name)));
if (names.length === 0) {
  console.error(`prebuild: no ONNX Runtime library for ${process.platform}-${process.arch} in ${ortDir}`);
  process.exit(1);
}
for (const name of names) copyFileSync(path.join(ortDir, name), path.join(target, name));
// Its version, for decide setup-cuda, which links this copy when it is the core it pins
// (src/engine/native.ts ORT_VERSION_STAMP names the file).
const ortVersion = JSON.parse(readFileSync(path.join(ortDir, '..', '..', '..', '..', 'package.json'), 'utf8')).version;
writeFileSync(path.join(target, 'onnxruntime-version'), `${ortVersion}\n`);
