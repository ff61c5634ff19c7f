/**
 * An engine flag of a `decide` command reaches the engines it loads (the flags derive from
 * ENGINE_OPTIONS; test/unit/cli-help.test.ts checks that every command lists and checks them).
 * Observed through the ONNX Runtime profile prefix, whose file appears when the engine closes, for
 * `decide batch`, which loads its engines through DecisionService as worker and calibrate do.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tempModels, type TempDirs } from '../api/fixtures.js';
import { runDecide } from '../helpers/bin.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

let dirs: TempDirs;

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
});
afterAll(() => dirs?.cleanup());

describe('decide batch with engine flags', () => {
  it('--ort-profile-prefix and --gather-logits off reach the engine: the run succeeds and the profile is written', async () => {
    const input = path.join(dirs.root, 'input.jsonl');
    await writeFile(input, `${JSON.stringify({ custom_id: 'a', state: 'hello', questions: { q: { type: 'noul', instructions: 'Is it?' } } })}\n`);
    const out = path.join(dirs.root, 'out.jsonl');
    const res = await runDecide([
      'batch', input, '--model', 'svc-alpha', '--models-dir', dirs.modelsDir, '--out', out,
      '--threads', '1', '--gather-logits', 'off', '--ort-profile-prefix', path.join(dirs.root, 'ort'),
    ]);
    expect(res.code, res.stderr).toBe(0);
    expect(readdirSync(dirs.root).filter((name) => /^ort_.*\.json$/.test(name))).toHaveLength(1);
  });
});

describe('decide bench --ort-profile', () => {
  it('profiles the graph the benchmark runs: with --fused-attention on, the fused graph derived from a standard-op model', async () => {
    // On CUDA, where fusedAttention auto derives it, the profile once ran the stored standard-op
    // graph instead (no graph deriver reached its engine) while the benchmark timed the fused one.
    const modelDir = await tinyModelDir({ segmentIds: true });
    const file = path.join(dirs.root, 'profile.json');
    const res = await runDecide(['bench', '--model-dir', modelDir, '--threads', '1', '--workloads', 'single', '--fused-attention', 'on', '--ort-profile', file]);
    expect(res.code, res.stderr).toBe(0);
    const ops = new Set((JSON.parse(readFileSync(file, 'utf8')) as Array<{ cat: string; args?: { op_name?: string } }>).filter((e) => e.cat === 'Node').map((e) => e.args?.op_name));
    expect(ops).toContain('RotaryEmbedding');
    expect(ops).not.toContain('Softmax');
  });

  it('with --size gpu profiles the GPU-size call of the workload (states scaled by --scale), the call a card is timed on', async () => {
    const modelDir = await tinyModelDir({ segmentIds: true });
    const file = path.join(dirs.root, 'profile-gpu.json');
    // document at GPU size: 16 states of 1,600 tokens, 13 questions each; a quarter: 4 states.
    const res = await runDecide(['bench', '--model-dir', modelDir, '--threads', '1', '--workloads', 'document', '--size', 'gpu', '--scale', '0.25', '--ort-profile', file]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain('(ONNX Runtime profile of one engine call, 52 decisions)');
    const refused = await runDecide(['bench', '--model-dir', modelDir, '--size', 'gpu', '--attention', 'causal', '--ort-profile', file]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--attention applies to the GPU-size benchmark, not to --ort-profile');
  });
});

describe('decide serve when the engine cannot load', () => {
  it('names the piece and the cause, not only the API\'s fixed message, and exits 1', async () => {
    const res = await runDecide([
      'serve', '--port', '0', '--models-dir', dirs.modelsDir, '--data-dir', path.join(dirs.root, 'serve-data'),
      '--threads', '1', '--ort-library', path.join(dirs.root, 'no-such-libonnxruntime.so'),
    ]);
    expect(res.code, res.stderr).toBe(1);
    expect(res.stderr).toMatch(/^decide serve: ONNX Runtime could not be loaded: cannot load ONNX Runtime from .*no-such-libonnxruntime\.so/m);
  });

  it('a bad DECIDE_RATE_LIMIT_RPS is a usage error (exit 2) before any API key is made', async () => {
    const dataDir = path.join(dirs.root, 'serve-data-rps');
    const res = await runDecide(['serve', '--port', '0', '--models-dir', dirs.modelsDir, '--data-dir', dataDir], undefined, { DECIDE_RATE_LIMIT_RPS: 'abc', DECIDE_API_KEYS: undefined, DECIDE_API_KEYS_FILE: undefined });
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toContain("DECIDE_RATE_LIMIT_RPS: must be a number of at least 0.00001, got 'abc'");
    expect(res.stdout).not.toContain('created an API key');
    expect(existsSync(path.join(dataDir, 'api-key'))).toBe(false);
  });
});

describe('decide bench on a graph with causal states', () => {
  // The fresh baseline runs the engine's graph file; a graph with causal states also takes
  // decide_state_span, which the baseline once left out ("input 'decide_state_span' is missing"),
  // so that `decide bench --provider cuda` (causal states derived by default there) stopped at its check.
  it('checks engine against baseline and times both: with --fused-attention on (derived) and on a stored causal-states graph', async () => {
    const derived = await tinyModelDir({ segmentIds: true });
    const stored = await tinyModelDir({ segmentIds: true, attention: 'fused', causalStates: true });
    const cases = [
      { modelDir: derived, flags: ['--fused-attention', 'on'], graph: path.join(derived, 'onnx', 'model.decide-fused', 'onnx') },
      { modelDir: stored, flags: [], graph: path.join(stored, 'onnx') },
    ];
    for (const { modelDir, flags, graph } of cases) {
      const results = path.join(dirs.root, `bench-causal-${path.basename(modelDir)}`);
      const res = await runDecide(['bench', '--model-dir', modelDir, '--threads', '1', '--quick', '--no-micro', '--no-latency', '--workloads', 'tickets', '--repetitions', '1', '--results-dir', results, ...flags]);
      expect(res.code, res.stderr).toBe(0);
      expect(res.stdout).toContain(`graph: ${graph}/model.decide-gather.onnx`);
      expect(res.stdout).toMatch(/check against the baseline: 16 rows, .*top option agrees on 16\/16 rows/);
    }
  });
});
