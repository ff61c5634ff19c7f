/**
 * `decide setup-cuda`: assembles ONNX Runtime for CUDA from the npm registry (see
 * src/engine/cuda-runtime.ts for what and why), then checks this host for the CUDA pieces the
 * provider needs. Nothing is downloaded outside the registry, and nothing runs by default: the
 * provider is 230 MB, so CPU hosts never fetch it.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rename, rm, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import {
  assembledCoreLibrary,
  CORE_LIBRARY,
  CUDA_RUNTIME_PACKAGES,
  cudaRuntimeDir,
  missingCudaPieces,
  nvrtcNote,
} from '../engine/cuda-runtime.js';
import { loadNativeModule, ORT_VERSION_STAMP, packageRootOf, prebuiltAddonPath } from '../engine/native.js';
import { removeLeftovers } from '../models/output-dir.js';
import { commandError, parseCommand } from './args.js';

const HELP = `usage: decide setup-cuda [--from DIR] [--check]

Makes --provider cuda work on a Linux x64 host with an NVIDIA driver and the CUDA 13 libraries:
puts ONNX Runtime's CUDA-capable core (${CUDA_RUNTIME_PACKAGES.core.spec}) and its CUDA provider
(${CUDA_RUNTIME_PACKAGES.provider.spec}, 180 MB to download) into
the package's cuda-runtime/ folder (or DECIDE_CUDA_RUNTIME_DIR), taking both from the npm registry
with \`npm pack\` (no install scripts run). The core is linked instead of fetched when that exact
version is already here: the copy the package ships in prebuilds/linux-x64/, or an installed
onnxruntime-node. Later engines, servers and workers use that folder by
themselves. Then it checks this host and names any missing CUDA piece with its fix.

options:
  --from DIR   take the two package tarballs (as \`npm pack\` names them) from DIR instead of the
               registry, for a host without registry access
  --check      only check: is a runtime assembled (or named by DECIDE_ORT_LIBRARY), and does this
               host have what it needs
  -h, --help   this text

exit status: 0 when the runtime is assembled and the host has every CUDA piece; 1 when a piece is
missing (the runtime stays assembled; the message says what to install); 2 on a usage error.
`;

const OPTIONS = {
  from: { type: 'string' },
  check: { type: 'boolean' },
} as const;

const execFileAsync = promisify(execFile);
const require = createRequire(import.meta.url);

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand('setup-cuda', argv, HELP, OPTIONS);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return commandError('setup-cuda', `the CUDA runtime is available for Linux x64 only; this host is ${process.platform}-${process.arch}`);
  }
  const dir = cudaRuntimeDir(packageRootOf(import.meta.url));
  if (!values.check) {
    try {
      await assemble(dir, values.from === undefined ? undefined : path.resolve(values.from));
    } catch (err) {
      return commandError('setup-cuda', (err as Error).message, 1);
    }
    process.stdout.write(`decide setup-cuda: ONNX Runtime for CUDA is in ${dir}\n`);
  }
  // --check honours DECIDE_ORT_LIBRARY as the engine does: a runtime put in place by hand counts.
  const named = values.check ? process.env.DECIDE_ORT_LIBRARY?.trim() : undefined;
  const assembled = named ? undefined : assembledCoreLibrary(dir);
  if (named && !existsSync(path.resolve(named))) return commandError('setup-cuda', `DECIDE_ORT_LIBRARY names ${path.resolve(named)}, which does not exist`, 1);
  // Nothing assembled yet: the host's own pieces (driver, CUDA libraries) are still checked, so a
  // host without a GPU learns it before fetching the runtime.
  const core = named ? path.resolve(named) : (assembled ?? path.join(dir, 'libonnxruntime.so.1'));
  const missing = missingCudaPieces(core, (name) => loadNativeModule().probeLibrary(name));
  if (missing.length > 0) {
    return commandError('setup-cuda', `this host cannot run the CUDA provider yet:\n${missing.map((m) => `  - ${m}`).join('\n')}`, 1);
  }
  process.stdout.write('decide setup-cuda: this host has the NVIDIA driver and the CUDA 13 libraries: --provider cuda is ready\n');
  const native = loadNativeModule();
  process.stdout.write(`decide setup-cuda: ${nvrtcNote((name) => native.probeLibrary(name), process.env, (arch) => native.compileOwnKernels(arch))}\n`);
  return 0;
}

/**
 * Removes what an interrupted run left (about 170 MB each): staging folders beside `dir` and work
 * folders in the temp directory, named after their run's pid, whose process is gone.
 */
async function sweepLeftovers(dir: string): Promise<void> {
  await removeLeftovers(path.dirname(dir), `${path.basename(dir)}.staging-`, /^(\d+)$/);
  await removeLeftovers(os.tmpdir(), WORK_PREFIX, /^(\d+)-/);
}

/** The temp work folders' prefix, followed by the run's pid. */
const WORK_PREFIX = 'decide-setup-cuda-';

/** Builds the runtime in a staging folder beside `dir` and renames it into place. */
async function assemble(dir: string, fromDir: string | undefined): Promise<void> {
  await mkdir(path.dirname(dir), { recursive: true });
  await sweepLeftovers(dir);
  const work = await mkdtemp(path.join(os.tmpdir(), `${WORK_PREFIX}${process.pid}-`));
  const staging = `${dir}.staging-${process.pid}`;
  try {
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging);
    const localCore = installedCore();
    if (localCore !== undefined) {
      // The same file onnxruntime-node's JS API (or the CPU engine) loads: one ORT copy in a process.
      await symlink(localCore, path.join(staging, CORE_LIBRARY));
    } else {
      await extractInto(staging, CUDA_RUNTIME_PACKAGES.core, await tarball(CUDA_RUNTIME_PACKAGES.core.spec, work, fromDir), work);
    }
    await extractInto(staging, CUDA_RUNTIME_PACKAGES.provider, await tarball(CUDA_RUNTIME_PACKAGES.provider.spec, work, fromDir), work);
    await rm(dir, { recursive: true, force: true });
    await rename(staging, dir);
  } finally {
    await rm(work, { recursive: true, force: true });
    await rm(staging, { recursive: true, force: true });
  }
}

/**
 * The pinned core when it is already on disk: onnxruntime-node's when that version is installed
 * beside us (a devDependency here), else the copy the package ships beside its prebuilt addon
 * (scripts/prebuild.mjs copies it from onnxruntime-node and stamps its version). Linking it saves
 * fetching onnxruntime-node's tarball and a second 45 MB copy.
 */
function installedCore(): string | undefined {
  return onnxruntimeNodeCore() ?? shippedCore();
}

function shippedCore(): string | undefined {
  const dir = path.dirname(prebuiltAddonPath());
  try {
    if (readFileSync(path.join(dir, ORT_VERSION_STAMP), 'utf8').trim() !== CUDA_RUNTIME_PACKAGES.core.version) return undefined;
  } catch {
    return undefined;
  }
  const lib = path.join(dir, CORE_LIBRARY);
  return existsSync(lib) ? lib : undefined;
}

function onnxruntimeNodeCore(): string | undefined {
  try {
    const pkg = require.resolve('onnxruntime-node/package.json');
    if ((require(pkg) as { version: string }).version !== CUDA_RUNTIME_PACKAGES.core.version) return undefined;
    const lib = path.join(path.dirname(pkg), 'bin', 'napi-v6', 'linux', 'x64', CORE_LIBRARY);
    return existsSync(lib) ? lib : undefined;
  } catch {
    return undefined;
  }
}

/** The package's tarball: from `fromDir` when given, else fetched from the registry with `npm pack`. */
async function tarball(spec: string, work: string, fromDir: string | undefined): Promise<string> {
  const [name, version] = [spec.slice(0, spec.lastIndexOf('@')), spec.slice(spec.lastIndexOf('@') + 1)];
  const file = `${name.replace(/^@/, '').replace('/', '-')}-${version}.tgz`;
  if (fromDir !== undefined) {
    const found = path.join(fromDir, file);
    if (!existsSync(found)) throw new Error(`--from ${fromDir}: ${file} is not there (make it with \`npm pack ${spec}\`)`);
    return found;
  }
  process.stderr.write(`decide setup-cuda: fetching ${spec} from the npm registry\n`);
  try {
    await execFileAsync('npm', ['pack', spec, '--pack-destination', work, '--silent'], { maxBuffer: 1 << 20 });
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new Error(`\`npm pack ${spec}\` failed${stderr ? `: ${stderr}` : ''}`);
  }
  const made = path.join(work, file);
  if (!existsSync(made)) throw new Error(`\`npm pack ${spec}\` did not write ${file}`);
  return made;
}

/** Copies the package's runtime files out of its tarball into `dir`, flat. */
async function extractInto(dir: string, pkg: { spec: string; files: readonly string[] }, tgz: string, work: string): Promise<void> {
  const out = await mkdtemp(path.join(work, 'x-'));
  try {
    await execFileAsync('tar', ['-xzf', tgz, '-C', out, ...pkg.files]);
  } catch (err) {
    throw new Error(`${tgz} does not hold ${pkg.files.join(', ')} (is it ${pkg.spec}?): ${(err as Error).message.split('\n')[0]}`);
  }
  for (const file of pkg.files) await copyFile(path.join(out, file), path.join(dir, path.basename(file)));
}
