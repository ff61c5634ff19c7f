/**
 * Engine load options: one table for names, flags, variables, defaults and checks
 * (ENGINE_OPTIONS in src/engine/engine-options.ts), and a native binding that requires every field
 * and refuses what would be undefined behaviour in a C++ cast (NaN, infinities, negatives,
 * fractions, out of range), each with ERR_INPUT naming the field.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { beforeAll, describe, expect, it } from 'vitest';

import { assertProviderReady, Engine } from '../../src/engine/engine.js';
import type { EngineError } from '../../src/errors/engine-error.js';
import { ENGINE_OPTION_NAMES, ENGINE_OPTIONS, PROVIDER_DEFAULTS, resolveLoadOptions, withEnvironment } from '../../src/engine/engine-options.js';
import { engineOptionsFromFlags } from '../../src/cli/engine-flags.js';
import { accepts, parseText } from '../../src/engine/option-checks.js';
import { readModelConfig } from '../../src/engine/model-dir.js';
import { loadNativeModule, resolveOrtLibrary, servesOurApi, type NativeLoadOptions } from '../../src/engine/native.js';
import { ROOT } from '../helpers/bin.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

let modelDir: string;
let packedDir: string;
let valid: NativeLoadOptions;

beforeAll(async () => {
  modelDir = await tinyModelDir();
  packedDir = await tinyModelDir({ segmentIds: true });
  const options = resolveLoadOptions({ modelDir, threads: 1 }, readModelConfig(modelDir), resolveOrtLibrary());
  valid = { ...options, modelPath: `${modelDir}/onnx/model.onnx` };
});

async function nativeLoad(options: Record<string, unknown>): Promise<unknown> {
  const engine = new (loadNativeModule().NativeEngine)();
  try {
    return await engine.load(options as unknown as NativeLoadOptions);
  } finally {
    engine.close();
  }
}

describe('the native binding', () => {
  it('loads with every field given', async () => {
    await expect(nativeLoad({ ...valid })).resolves.toBeUndefined();
  });

  it('requires every field: dropping any one is ERR_INPUT naming it', async () => {
    const keys = Object.keys(valid);
    expect(keys.length).toBeGreaterThanOrEqual(17);
    for (const key of keys) {
      const options: Record<string, unknown> = { ...valid };
      delete options[key];
      await expect(nativeLoad(options), key).rejects.toMatchObject({ code: 'ERR_INPUT', message: `options.${key} is required` });
    }
  });

  it('sizes a budget of 0 from the device, never below the floor sent: all of it on the CPU, which tells no free memory', async () => {
    const engine = new (loadNativeModule().NativeEngine)();
    try {
      await engine.load({ ...valid, attentionBudget: 0, attentionBudgetFloor: 12345 });
      expect(engine.info().attentionBudget).toBe(12345);
    } finally {
      engine.close();
    }
    expect(valid.attentionBudgetFloor).toBe(PROVIDER_DEFAULTS.cpu.attentionBudget);
  });

  it.each([
    ['attentionBudgetFloor', 0],
    ['tokenBudget', Number.NaN],
    ['tokenBudget', 0],
    ['tokenBudget', 2.5],
    ['prefixCacheBytes', -1],
    ['prefixCacheBytes', Number.POSITIVE_INFINITY],
    ['pastBudgetBytes', -1],
    ['attentionBudget', -1],
    ['threads', 0],
    ['threads', 2 ** 31],
    ['deviceId', -1],
    ['vocabSize', 0],
    ['maxContext', -4096],
    ['attentionWeight', Number.NaN],
    ['passOverheadTokens', Number.POSITIVE_INFINITY],
    ['passOverheadTokens', -1],
    ['packSuffixes', 1],
    ['provider', 'tpu'],
    ['modelPath', ''],
    ['threads', '4'],
  ])('refuses %s = %s with ERR_INPUT', async (key, value) => {
    await expect(nativeLoad({ ...valid, [key]: value })).rejects.toMatchObject({
      code: 'ERR_INPUT',
      message: expect.stringContaining(`options.${key}`),
    });
  });
});

describe('Engine.load', () => {
  it.each([
    ['tokenBudget', -8],
    ['tokenBudget', Number.NaN],
    ['prefixCacheBytes', -1],
    ['pastBudgetBytes', 1.5],
    ['threads', 0],
    ['deviceId', Number.NaN],
    ['passOverheadTokens', Number.NaN],
    ['passOverheadTokens', -1],
    ['packSuffixes', 'yes'],
    ['passLengthMultiple', 0],
    ['passLengthMultiple', 2.5],
    ['ortProfilePrefix', ''],
    ['ortProfilePrefix', '/no-such-folder/ort'],
    ['provider', 'tpu'],
  ])('refuses %s = %s with ERR_INPUT naming it', async (key, value) => {
    await expect(Engine.load({ modelDir, [key]: value } as unknown as Parameters<typeof Engine.load>[0])).rejects.toMatchObject({
      code: 'ERR_INPUT',
      message: expect.stringContaining(`options.${key}`),
    });
  });

  it('packs on a packing graph by the one default (off on the CPU), and when asked', async () => {
    expect(PROVIDER_DEFAULTS.cpu.packSuffixes).toBe(false);
    expect(PROVIDER_DEFAULTS.cuda.packSuffixes).toBe(true);
    const byDefault = await Engine.load({ modelDir: packedDir });
    const asked = await Engine.load({ modelDir: packedDir, packSuffixes: true });
    try {
      expect(byDefault.info.packsSuffixes).toBe(false);
      expect(asked.info.packsSuffixes).toBe(true);
    } finally {
      byDefault.close();
      asked.close();
    }
  });

  it('takes Infinity as the pass overhead (fewest passes) and scores', async () => {
    const engine = await Engine.load({ modelDir, passOverheadTokens: Number.POSITIVE_INFINITY });
    try {
      const [[score]] = await engine.score([{ prefix: Int32Array.from([5, 6, 7]), suffixes: [{ tokens: Int32Array.from([8]), labels: Int32Array.from([1, 2]) }] }]);
      expect(score!.labelLogits).toHaveLength(2);
    } finally {
      engine.close();
    }
  });
});

describe('ENGINE_OPTIONS, the one table', () => {
  const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  const upperSnake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase();

  it('names each flag after its option, and each variable DECIDE_ + its name (int8Path: DECIDE_INT8_KERNEL, the name users have)', () => {
    for (const name of ENGINE_OPTION_NAMES) {
      const spec = ENGINE_OPTIONS[name];
      expect(spec.flag, name).toBe(`--${kebab(name)}`);
      expect(spec.env, name).toBe(name === 'int8Path' ? 'DECIDE_INT8_KERNEL' : `DECIDE_${upperSnake(name)}`);
    }
  });

  it("gives every option a default its own check accepts, on either provider (or says how it is found at load)", () => {
    for (const name of ENGINE_OPTION_NAMES) {
      const spec = ENGINE_OPTIONS[name];
      for (const provider of ['cpu', 'cuda'] as const) {
        const value = spec.default(provider);
        if (value === undefined) expect(spec.defaultText, name).toBeTruthy();
        else expect(accepts(spec.check, value), `${name} on ${provider}: ${String(value)}`).toBe(true);
      }
    }
  });

  it('reads a flag or a variable by the same check: on/off, Infinity, integers only where integers go', () => {
    expect(parseText(ENGINE_OPTIONS.packSuffixes.check, 'on')).toBe(true);
    expect(parseText(ENGINE_OPTIONS.packSuffixes.check, 'off')).toBe(false);
    expect(parseText(ENGINE_OPTIONS.packSuffixes.check, 'yes')).toBeUndefined();
    expect(parseText(ENGINE_OPTIONS.passOverheadTokens.check, 'Infinity')).toBe(Number.POSITIVE_INFINITY);
    expect(parseText(ENGINE_OPTIONS.passOverheadTokens.check, '2.5')).toBe(2.5);
    expect(parseText(ENGINE_OPTIONS.tokenBudget.check, '2.5')).toBeUndefined();
    expect(parseText(ENGINE_OPTIONS.tokenBudget.check, '0')).toBeUndefined();
    expect(parseText(ENGINE_OPTIONS.threads.check, '1025')).toBeUndefined();
    expect(parseText(ENGINE_OPTIONS.provider.check, 'tpu')).toBeUndefined();
  });
});

describe('assertProviderReady', () => {
  it('says before any model is built that a CUDA library cannot run here; the CPU is always ready', () => {
    expect(() => assertProviderReady({ provider: 'cpu' })).not.toThrow();
    expect(() => assertProviderReady({ provider: 'cuda', ortLibrary: '/nonexistent/libonnxruntime.so.1' })).toThrow(
      expect.objectContaining({ code: 'ERR_PROVIDER_UNAVAILABLE', message: expect.stringMatching(/the CUDA provider cannot run on this host/) }),
    );
  });
});

describe('options that do not exist', () => {
  it('Engine.load refuses an unknown option name (a typo would be ignored) and options that are not an object, with ERR_INPUT', async () => {
    await expect(Engine.load({ modelDir, thread: 1 } as never)).rejects.toMatchObject({ code: 'ERR_INPUT', message: "Engine.load: unknown option 'thread' (did you mean 'threads'?)" });
    await expect(Engine.load({ modelDir, speed: 'max' } as never)).rejects.toMatchObject({ code: 'ERR_INPUT', message: "Engine.load: unknown option 'speed'" });
    for (const given of [undefined, null, 'models/x', []]) {
      await expect(Engine.load(given as never), String(given)).rejects.toMatchObject({ code: 'ERR_INPUT', message: 'Engine.load(options): options must be an object with at least modelDir' });
    }
    // An integer past 2^53 - 1 says the top of the range it passed.
    await expect(Engine.load({ modelDir, prefixCacheBytes: 2 ** 60 })).rejects.toMatchObject({
      code: 'ERR_INPUT',
      message: `options.prefixCacheBytes must be an integer of at least 0 and at most ${Number.MAX_SAFE_INTEGER} (2^53 - 1) (got ${2 ** 60})`,
    });
    // modelDir and graphDeriver, named (an empty modelDir would be read as the current directory).
    for (const [given, message] of [
      [{ threads: 1 }, 'Engine.load: modelDir must be a path (a string), got undefined'],
      [{ modelDir: 5 }, 'Engine.load: modelDir must be a path (a string), got 5'],
      [{ modelDir: '' }, 'Engine.load: modelDir must name a folder, got an empty value'],
      [{ modelDir, graphDeriver: 'x' }, "Engine.load: graphDeriver must be a function, got 'x'"],
    ] as const) {
      await expect(Engine.load(given as never), message).rejects.toMatchObject({ code: 'ERR_INPUT', message });
    }
    // A system error under the engine is ERR_RUNTIME or the engine's own code, never ENOENT or Node's ERR_INVALID_ARG_TYPE.
    const missing = await Engine.load({ modelDir: path.join(modelDir, 'no-such-model') }).catch((e: unknown) => e);
    expect(['ERR_MODEL_LOAD', 'ERR_RUNTIME']).toContain((missing as EngineError).code);
  });
});

describe('options that cannot go together', () => {
  it('cudaGraphs without provider cuda: ERR_INPUT from the library, a usage error naming the flags from a command', async () => {
    await expect(Engine.load({ modelDir, cudaGraphs: true })).rejects.toMatchObject({ code: 'ERR_INPUT', message: expect.stringMatching(/^options\.cudaGraphs needs provider 'cuda'/) });
    expect(engineOptionsFromFlags({ 'cuda-graphs': 'on' })).toMatch(/^--cuda-graphs needs provider 'cuda'/);
    const saved = process.env.DECIDE_CUDA_GRAPHS;
    process.env.DECIDE_CUDA_GRAPHS = 'on';
    try {
      expect(engineOptionsFromFlags({})).toMatch(/^DECIDE_CUDA_GRAPHS needs provider 'cuda'/);
    } finally {
      if (saved === undefined) delete process.env.DECIDE_CUDA_GRAPHS;
      else process.env.DECIDE_CUDA_GRAPHS = saved;
    }
    expect(engineOptionsFromFlags({ 'cuda-graphs': 'on', provider: 'cuda' })).toEqual({ cudaGraphs: true, provider: 'cuda' });
    // shapeBuckets, what it rests on, runs anywhere.
    expect(engineOptionsFromFlags({ 'shape-buckets': 'on' })).toEqual({ shapeBuckets: true });
  });
});

describe('the DECIDE_* variables', () => {
  it("fill the options the caller leaves out; the caller's value wins", () => {
    const env = { DECIDE_TOKEN_BUDGET: '512', DECIDE_PACK_SUFFIXES: 'on', DECIDE_PASS_OVERHEAD_TOKENS: 'Infinity', DECIDE_THREADS: '3' };
    expect(withEnvironment({ threads: 2 }, env)).toEqual({ threads: 2, tokenBudget: 512, packSuffixes: true, passOverheadTokens: Number.POSITIVE_INFINITY });
  });

  it('refuse a bad value with ERR_INPUT naming the variable', () => {
    expect(() => withEnvironment({}, { DECIDE_PREFILL_CHUNKS: 'maybe' })).toThrow(
      expect.objectContaining({ code: 'ERR_INPUT', message: "DECIDE_PREFILL_CHUNKS must be on or off, got 'maybe'" }),
    );
    // Given by the caller, the variable is not read at all.
    expect(withEnvironment({ prefillChunks: false }, { DECIDE_PREFILL_CHUNKS: 'maybe' })).toEqual({ prefillChunks: false });
  });

  it('reach Engine.load: DECIDE_PACK_SUFFIXES=on packs on the CPU, a bad DECIDE_TOKEN_BUDGET is refused', async () => {
    const saved = { pack: process.env.DECIDE_PACK_SUFFIXES, budget: process.env.DECIDE_TOKEN_BUDGET };
    try {
      process.env.DECIDE_PACK_SUFFIXES = 'on';
      const engine = await Engine.load({ modelDir: packedDir });
      try {
        expect(engine.info.packsSuffixes).toBe(true);
      } finally {
        engine.close();
      }
      process.env.DECIDE_TOKEN_BUDGET = '-5';
      await expect(Engine.load({ modelDir })).rejects.toMatchObject({ code: 'ERR_INPUT', message: "DECIDE_TOKEN_BUDGET must be an integer of at least 1, got '-5'" });
    } finally {
      for (const [key, value] of [['DECIDE_PACK_SUFFIXES', saved.pack], ['DECIDE_TOKEN_BUDGET', saved.budget]] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });

  it('ortLogLevel is an option like the others (it was a variable only)', async () => {
    await expect(Engine.load({ modelDir, ortLogLevel: 7 })).rejects.toMatchObject({ code: 'ERR_INPUT', message: expect.stringContaining('options.ortLogLevel') });
    expect(resolveLoadOptions({ modelDir, ortLogLevel: 1 }, readModelConfig(modelDir), resolveOrtLibrary()).ortLogSeverity).toBe(1);
  });
});

describe('which ONNX Runtime is loaded', () => {
  it("an installed onnxruntime-node is used only when it serves the addon's C API (1.29 or newer); an older one is passed over for the package's own", () => {
    expect(['1.21.0', '1.24.3', '1.28.9'].filter(servesOurApi)).toEqual([]);
    expect(['1.29.0', '1.30.0', '1.100.1', '2.0.0'].every(servesOurApi)).toBe(true);
    // This checkout's devDependency is new enough (its library is the one the tests load).
    const installed = JSON.parse(readFileSync(path.join(ROOT, 'node_modules', 'onnxruntime-node', 'package.json'), 'utf8')) as { version: string };
    expect(servesOurApi(installed.version)).toBe(true);
  });
});

describe('one ONNX Runtime a process', () => {
  it('an engine loaded without ortLibrary after one loaded with it runs on that runtime, not a refused second copy', () => {
    // In a child process: this one has its runtime loaded already, and tests share it.
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'ort-named-'));
    try {
      const named = path.join(scratch, 'libonnxruntime.so.1');
      symlinkSync(resolveOrtLibrary(), named);
      const script = `
        const { Engine } = await import(${JSON.stringify(path.join(ROOT, 'dist/src/entry/engine.js'))});
        const named = await Engine.load({ modelDir: ${JSON.stringify(modelDir)}, threads: 1, ortLibrary: ${JSON.stringify(named)} });
        const plain = await Engine.load({ modelDir: ${JSON.stringify(modelDir)}, threads: 1 });
        console.log(JSON.stringify([named.info.ortLibrary, plain.info.ortLibrary]));
        named.close();
        plain.close();`;
      const env = { ...process.env, DECIDE_ORT_LIBRARY: '' };
      const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env });
      expect(run.status, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout.trim().split('\n').at(-1)!)).toEqual([named, named]);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
