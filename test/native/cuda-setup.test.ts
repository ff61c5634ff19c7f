/**
 * `--provider cuda` on a host that may have no GPU: each missing piece (the runtime that
 * `decide setup-cuda` assembles, the provider library, the NVIDIA driver, the CUDA 13 libraries) is
 * an ERR_PROVIDER_UNAVAILABLE naming it and the fix, and `decide setup-cuda` explains itself. On a
 * host that has a piece, the assertion about that piece is skipped (nothing here needs a GPU, and
 * nothing fails for having one).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';

import { CUDA_HOST_LIBRARIES, nvrtcNote, PROVIDER_LIBRARIES } from '../../src/engine/cuda-runtime.js';
import { Engine } from '../../src/engine/engine.js';
import { loadNativeModule } from '../../src/engine/native.js';
import { DECIDE_BIN } from '../batches/helpers.js';
import { decideBin } from '../helpers/bin.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'decide-cuda-setup-'));
const savedEnv = { runtime: process.env.DECIDE_CUDA_RUNTIME_DIR, ort: process.env.DECIDE_ORT_LIBRARY };
const require = createRequire(import.meta.url);
const probe = (name: string) => loadNativeModule().probeLibrary(name);

afterEach(() => {
  for (const [key, value] of [['DECIDE_CUDA_RUNTIME_DIR', savedEnv.runtime], ['DECIDE_ORT_LIBRARY', savedEnv.ort]] as const) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function loadError(options: Parameters<typeof Engine.load>[0]): Promise<{ code: string; message: string }> {
  try {
    const engine = await Engine.load(options);
    engine.close();
  } catch (err) {
    return err as { code: string; message: string };
  }
  throw new Error('Engine.load succeeded');
}

describe('probeLibrary (the dynamic loader, asked by name)', () => {
  it('is null for a library that loads and the loader message for one that does not', () => {
    expect(probe('libc.so.6')).toBeNull();
    expect(probe('libdecide-no-such-library.so.7')).toMatch(/libdecide-no-such-library\.so\.7/);
  });
});

describe("NVRTC for the engine's own kernels (setup-cuda --check's last line)", () => {
  it('names the library that loads, or says what is missing and that nothing else needs it', () => {
    // Any loadable library stands in for NVRTC here: the note only asks the loader.
    expect(nvrtcNote(probe, { DECIDE_NVRTC_LIBRARY: 'libc.so.6' })).toBe("the engine's own kernels (--own-kernels on) can be compiled here: NVRTC (libc.so.6) loads");
    const missing = nvrtcNote(probe, { DECIDE_NVRTC_LIBRARY: '/nonexistent/libnvrtc.so.13' });
    expect(missing).toContain('need NVRTC, and /nonexistent/libnvrtc.so.13 cannot be loaded');
    expect(missing).toContain('everything else runs without it');
    // With a compile step: what it says is told.
    expect(nvrtcNote(probe, { DECIDE_NVRTC_LIBRARY: 'libc.so.6' }, () => null)).toContain('loads and compiles them');
    expect(nvrtcNote(probe, { DECIDE_NVRTC_LIBRARY: 'libc.so.6' }, () => 'a compile error')).toContain('do not compile here with NVRTC (libc.so.6): a compile error');
    // Unset: the sonames the addon tries, in its order.
    const note = nvrtcNote(probe, {});
    if (probe('libnvrtc.so.13') !== null && probe('libnvrtc.so.12') !== null && probe('libnvrtc.so') !== null) {
      expect(note).toContain('libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so cannot be loaded');
    }
  });
});

describe('compileOwnKernels (NVRTC, asked by the addon)', () => {
  it('compiles the kernels where NVRTC is found, else says what is missing', () => {
    const result = loadNativeModule().compileOwnKernels('compute_75');
    if (result === null) return; // this host has NVRTC: compiled
    expect(result).toMatch(/need NVRTC \(libnvrtc, part of the CUDA toolkit\) and none usable was found \(tried .*libnvrtc/);
  });
});

describe('Engine.load with provider cuda', () => {
  it('with no runtime set up: names `npx decide setup-cuda` and DECIDE_ORT_LIBRARY', async () => {
    delete process.env.DECIDE_ORT_LIBRARY;
    process.env.DECIDE_CUDA_RUNTIME_DIR = path.join(tmp, 'nothing-here');
    const err = await loadError({ modelDir: await tinyModelDir(), provider: 'cuda' });
    expect(err.code).toBe('ERR_PROVIDER_UNAVAILABLE');
    expect(err.message).toContain('no CUDA-capable ONNX Runtime is set up');
    expect(err.message).toContain(path.join(tmp, 'nothing-here'));
    expect(err.message).toContain('npx decide setup-cuda');
    expect(err.message).toContain('DECIDE_ORT_LIBRARY');
  });

  it('with a core that has no CUDA provider beside it, and on a host without the driver or CUDA 13: names each missing piece and its fix', async () => {
    // onnxruntime-node's core, copied alone into a folder: the provider libraries are not beside it.
    const lonely = path.join(tmp, 'lonely');
    mkdirSync(lonely);
    const core = path.join(lonely, 'libonnxruntime.so.1');
    copyFileSync(path.join(path.dirname(require.resolve('onnxruntime-node/package.json')), 'bin/napi-v6/linux/x64/libonnxruntime.so.1'), core);
    process.env.DECIDE_ORT_LIBRARY = core;
    const err = await loadError({ modelDir: await tinyModelDir(), provider: 'cuda' });
    expect(err.code).toBe('ERR_PROVIDER_UNAVAILABLE');
    expect(err.message).toMatch(/^the CUDA provider cannot run on this host:\n/);
    expect(err.message).toContain(`ONNX Runtime's CUDA provider (${PROVIDER_LIBRARIES.join(', ')}) is not beside ${core}: run \`npx decide setup-cuda\``);
    for (const lib of CUDA_HOST_LIBRARIES) {
      if (probe(lib.name) === null) continue; // this host has it
      expect(err.message).toContain(`${lib.what} (${lib.name}) cannot be loaded: ${lib.fix}`);
    }
    // Nothing of ONNX Runtime was loaded from the lonely copy: a CPU engine still loads as usual.
    delete process.env.DECIDE_ORT_LIBRARY;
    const engine = await Engine.load({ modelDir: await tinyModelDir(), threads: 1 });
    expect(engine.info.numLayers).toBe(2);
    engine.close();
  });
});

describe('decide setup-cuda', () => {
  const run = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    spawnSync(process.execPath, [DECIDE_BIN, 'setup-cuda', ...args], { encoding: 'utf8', env: { ...process.env, ...env } });

  it('--help says what it fetches and where from', async () => {
    await decideBin();
    const res = run(['--help']);
    expect(res.status).toBe(0);
    expect(res.stdout).toContain('onnxruntime-node@1.30.0');
    expect(res.stdout).toContain('com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9');
    expect(res.stdout).toContain('npm registry');
  });

  it('--check with nothing assembled: exit 1, naming the command to run and every piece the host itself lacks', async () => {
    await decideBin();
    const res = run(['--check'], { DECIDE_CUDA_RUNTIME_DIR: path.join(tmp, 'empty-runtime') });
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(new RegExp(`ONNX Runtime's CUDA provider \\(.*\\) is not beside ${path.join(tmp, 'empty-runtime', 'libonnxruntime.so.1').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: run \`npx decide setup-cuda\``));
    // On a host without the driver (this one, in CI) that is said now, not after the download.
    const probe = (name: string) => loadNativeModule().probeLibrary(name);
    if (probe('libcuda.so.1') !== null) expect(res.stderr).toContain('the NVIDIA driver (libcuda.so.1) cannot be loaded');
  });

  it('--from a folder without the tarballs: exit 1, naming the file and how to make it; nothing is left behind', async () => {
    await decideBin();
    const runtime = path.join(tmp, 'from-runtime');
    const empty = path.join(tmp, 'no-tarballs');
    mkdirSync(empty);
    const res = run(['--from', empty], { DECIDE_CUDA_RUNTIME_DIR: runtime });
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/--from .*no-tarballs: com\.github\.asus4\.onnxruntime\.linux-x64-gpu-0\.4\.9\.tgz is not there \(make it with `npm pack com\.github\.asus4\.onnxruntime\.linux-x64-gpu@0\.4\.9`\)/);
    expect(existsSync(runtime)).toBe(false);
    expect(readdirSync(tmp).filter((f) => f.startsWith('from-runtime'))).toEqual([]);
  });

  it('removes what an interrupted run left (staging and work folders of a process that is gone), never a live run\'s', async () => {
    await decideBin();
    const runtime = path.join(tmp, 'swept-runtime');
    const gone = spawnSync('true').pid!;
    const leftovers = [`${runtime}.staging-${gone}`, path.join(os.tmpdir(), `decide-setup-cuda-${gone}-abc`)];
    const live = `${runtime}.staging-${process.pid}`;
    for (const dir of [...leftovers, live]) mkdirSync(dir, { recursive: true });
    const empty = path.join(tmp, 'no-tarballs-2');
    mkdirSync(empty);
    try {
      expect(run(['--from', empty], { DECIDE_CUDA_RUNTIME_DIR: runtime }).status).toBe(1);
      for (const dir of leftovers) expect(existsSync(dir), dir).toBe(false);
      expect(existsSync(live)).toBe(true);
    } finally {
      for (const dir of [...leftovers, live]) rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an unknown option is a usage error (exit 2)', async () => {
    await decideBin();
    const res = run(['--provider', 'cuda']);
    expect(res.status).toBe(2);
    expect(res.stderr).toContain('decide setup-cuda:');
  });
});
