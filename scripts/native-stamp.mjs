// The native addon's build stamp: the SHA-256 of the sources it was built from (every file under
// native/, sorted by path, and CMakeLists.txt), written beside build/Release/decide_native.node by
// `npm run build:native` and checked by the test setup (test/helpers/native-build.ts), so a copy
// of the tree (a packed GPU host's, say) can run the tests without rebuilding.
// usage: node scripts/native-stamp.mjs [--write]
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const ADDON = path.join(ROOT, 'build', 'Release', 'decide_native.node');
export const STAMP = path.join(ROOT, 'build', 'Release', 'decide_native.sources-sha256');

/** SHA-256 over the native sources: every file under native/ (sorted by path) and CMakeLists.txt. */
export function nativeSourcesHash(root = ROOT) {
  const hash = createHash('sha256');
  const files = [
    'CMakeLists.txt',
    ...readdirSync(path.join(root, 'native'), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => path.relative(root, path.join(e.parentPath, e.name))),
  ].sort();
  for (const file of files) hash.update(file).update('\0').update(readFileSync(path.join(root, file))).update('\0');
  return hash.digest('hex');
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes('--write')) {
  if (!existsSync(ADDON)) {
    process.stderr.write(`native-stamp: ${ADDON} does not exist; build it first\n`);
    process.exit(1);
  }
  writeFileSync(STAMP, `${nativeSourcesHash()}\n`);
}
