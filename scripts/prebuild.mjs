// Copies the addon just built (build/Release) to prebuilds/<platform>-<arch>/, which the npm
// package ships: where the package is installed on the same platform, no compiler is needed.
// Runs in `prepare`, so `npm pack` and `npm publish` always carry the current build.
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const target = path.join(root, 'prebuilds', `${process.platform}-${process.arch}`);
mkdirSync(target, { recursive: true });
copyFileSync(path.join(root, 'build', 'Release', 'decide_native.node'), path.join(target, 'decide_native.node'));
