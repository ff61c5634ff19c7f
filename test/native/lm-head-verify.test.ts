/**
 * The LM-head rewrite: verified through the native engine (no onnxruntime-node at run time), cached
 * beside the graph with a stamp (the rewrite's version and the stock graph's SHA-256), made again
 * when the stamp does not match, and, when it cannot be used, a fallback to the stock graph that
 * EngineInfo.lmHead and the service's log explain. A 1-D logits index (the shape of rewrites cached
 * before stamps) is refused by the native engine: only the TypeScript side makes rewrites.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import onnxProto from 'onnx-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { resolveLoadOptions } from '../../src/engine/engine-options.js';
import { LM_HEAD_REWRITE_VERSION, POSITION_INDEX_INPUT, POSITION_TOKEN_INDEX_INPUT, rewriteLmHead, rewriteStampPath, rewrittenPath } from '../../src/engine/lm-head-rewrite.js';
import { verifyRewrite } from '../../src/engine/lm-head-verify.js';
import { findGraphFile, readModelConfig } from '../../src/engine/model-dir.js';
import { loadNativeModule, resolveOrtLibrary } from '../../src/engine/native.js';
import { prepareScoringGraph } from '../../src/engine/scoring-graph.js';
import { makeModel } from '../../src/models/builder/make-model.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

const { onnx } = onnxProto;
const GROUP = { prefix: Int32Array.of(5, 9, 17, 33, 250), suffixes: [{ tokens: Int32Array.of(40, 41), labels: Int32Array.of(1, 2, 3, 4) }] };

let tmp: string;
let modelDir: string;
let otherDir: string;
/** The stock graph's label logits for GROUP: what every graph the engine picks must reproduce. */
let stockLogits: Float32Array;

const loadOptions = (dir: string) => resolveLoadOptions({ modelDir: dir, threads: 1 }, readModelConfig(dir), resolveOrtLibrary());
const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

async function scoreWith(dir: string, options: { gatherLogits?: boolean } = {}) {
  const engine = await Engine.load({ modelDir: dir, threads: 1, ...options });
  try {
    const [[score]] = await engine.score([GROUP]);
    return { info: engine.info, logits: score!.labelLogits };
  } finally {
    engine.close();
  }
}

function expectClose(a: Float32Array, b: Float32Array) {
  expect(a.length).toBe(b.length);
  a.forEach((v, i) => expect(Math.abs(v - b[i]!)).toBeLessThan(1e-4));
}

/** A copy of the tiny model under `name` with its graph transformed (stock graph only, no cache). */
async function variantDir(name: string, transform?: (model: onnxProto.onnx.ModelProto) => void): Promise<string> {
  const dir = path.join(tmp, name);
  await cp(await tinyModelDir(), dir, { recursive: true });
  const graph = findGraphFile(dir);
  await rm(rewrittenPath(graph), { force: true });
  await rm(rewriteStampPath(graph), { force: true });
  if (transform) {
    const model = onnx.ModelProto.decode(readFileSync(graph));
    transform(model);
    writeFileSync(graph, onnx.ModelProto.encode(model).finish());
  }
  return dir;
}

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'lm-head-verify-'));
  modelDir = await variantDir('tiny');
  otherDir = path.join(tmp, 'other');
  await makeModel({ preset: 'tiny', outDir: otherDir, seed: 2 });
  stockLogits = (await scoreWith(modelDir, { gatherLogits: false })).logits;
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('LM-head rewrite', () => {
  it('a fresh rewrite is verified, written beside the graph with its stamp, and loaded', async () => {
    const stock = findGraphFile(modelDir);
    expect(existsSync(rewrittenPath(stock))).toBe(false);
    const { info, logits } = await scoreWith(modelDir);
    expect(info.graphFile).toBe(rewrittenPath(stock));
    expect(info.hasLogitsIndex).toBe(true);
    expect(info.lmHead).toEqual({ graph: 'rewrite' });
    expect(JSON.parse(readFileSync(rewriteStampPath(stock), 'utf8'))).toEqual({ version: LM_HEAD_REWRITE_VERSION, sourceSha256: sha256(stock) });
    expectClose(logits, stockLogits);
    // Gathers over flat indices, no GatherND: ONNX Runtime's CUDA GatherND copies a host vector on
    // every run, which a captured CUDA graph replays from freed memory (an illegal address on an H200).
    const ops = onnx.ModelProto.decode(readFileSync(rewrittenPath(stock))).graph!.node!.map((n) => n.opType);
    expect(ops).not.toContain('GatherND');
    expect(ops.filter((op) => op === 'Gather').length).toBeGreaterThanOrEqual(3);
  });

  it("a rewrite that computes other logits (another model's graph) is rejected", async () => {
    const stock = findGraphFile(modelDir);
    const foreign = await prepareScoringGraph(findGraphFile(otherDir), loadOptions(otherDir));
    expect(foreign.graphFile).toBe(rewrittenPath(findGraphFile(otherDir)));
    await expect(verifyRewrite(stock, foreign.graphFile, loadOptions(modelDir))).rejects.toThrow(/rewrite mismatch/);
  });

  // Each cache holds another model's rewrite, newer than the stock graph: reuse by file time would
  // take it and score the other model.
  it.each([
    ['no stamp (cached before stamps)', undefined],
    ['an older version', (sourceSha256: string) => ({ version: LM_HEAD_REWRITE_VERSION - 1, sourceSha256 })],
    ["another graph's hash", () => ({ version: LM_HEAD_REWRITE_VERSION, sourceSha256: '0'.repeat(64) })],
  ])('a cached rewrite with %s is made again from this graph', async (_case, stampFor) => {
    const stock = findGraphFile(modelDir);
    const foreign = rewrittenPath(findGraphFile(otherDir));
    await prepareScoringGraph(findGraphFile(otherDir), loadOptions(otherDir));
    copyFileSync(foreign, rewrittenPath(stock));
    if (stampFor) writeFileSync(rewriteStampPath(stock), JSON.stringify(stampFor(sha256(stock))));
    else await rm(rewriteStampPath(stock), { force: true });
    const future = new Date(statSync(stock).mtimeMs + 60_000);
    utimesSync(rewrittenPath(stock), future, future);

    const { info, logits } = await scoreWith(modelDir);
    expect(info.lmHead).toEqual({ graph: 'rewrite' });
    expectClose(logits, stockLogits);
    const fresh = rewriteLmHead(readFileSync(stock));
    expect(fresh.kind).toBe('rewritten');
    expect(Buffer.compare(readFileSync(rewrittenPath(stock)), Buffer.from((fresh as { bytes: Uint8Array }).bytes))).toBe(0);
    expect(JSON.parse(readFileSync(rewriteStampPath(stock), 'utf8'))).toEqual({ version: LM_HEAD_REWRITE_VERSION, sourceSha256: sha256(stock) });
  });

  it('engines loading one model at once, each remaking its stale rewrite, all load and agree', async () => {
    const dir = await variantDir('concurrent');
    const stock = findGraphFile(dir);
    const foreign = rewrittenPath(findGraphFile(otherDir));
    await prepareScoringGraph(findGraphFile(otherDir), loadOptions(otherDir));
    copyFileSync(foreign, rewrittenPath(stock));
    const runs = await Promise.all(Array.from({ length: 4 }, () => scoreWith(dir)));
    for (const { info, logits } of runs) {
      expect(info.lmHead).toEqual({ graph: 'rewrite' });
      expectClose(logits, stockLogits);
    }
  });

  it('gatherLogits: false loads the stock graph and says so', async () => {
    const { info } = await scoreWith(modelDir, { gatherLogits: false });
    expect(info.graphFile).toBe(findGraphFile(modelDir));
    expect(info.lmHead).toEqual({ graph: 'stock', reason: 'off' });
  });
});

describe('a graph the rewrite does not fit', () => {
  let dir: string;
  beforeAll(async () => {
    // An Identity between the LM head and `logits`: the rewrite finds no MatMul producing logits.
    dir = await variantDir('identity-head', (model) => {
      const head = model.graph!.node!.find((n) => n.output?.includes('logits'))!;
      head.output = head.output!.map((o) => (o === 'logits' ? 'logits_before_identity' : o));
      model.graph!.node!.push(onnx.NodeProto.create({ name: '/identity_head', opType: 'Identity', input: ['logits_before_identity'], output: ['logits'] }));
    });
  });

  it('falls back to the stock graph, scores right, and EngineInfo says why', async () => {
    const { info, logits } = await scoreWith(dir);
    expect(info.graphFile).toBe(findGraphFile(dir));
    expect(info.hasLogitsIndex).toBe(false);
    expect(info.lmHead).toEqual({ graph: 'stock', reason: 'fallback', detail: expect.stringMatching(/does not apply: no two-input MatMul produces/) });
    expectClose(logits, stockLogits);
  });

  it("the service's log names the model and the reason", async () => {
    const modelsDir = path.join(tmp, 'models');
    await mkdir(modelsDir, { recursive: true });
    await cp(dir, path.join(modelsDir, 'svc-alpha-2026-10'), { recursive: true });
    const lines: string[] = [];
    const service = await DecisionService.open({ modelsDir, ensureDefaultModel: false, log: (line) => lines.push(line) });
    try {
      expect(lines).toContainEqual(expect.stringMatching(/^model svc-alpha-2026-10: scoring with the stock graph .*no two-input MatMul/));
    } finally {
      await service.close();
    }
  });
});

type ModelProto = onnxProto.onnx.ModelProto;

// Scoring heads of older rewrites, as a graph given to the engine directly: refused at load, naming
// what to do (src/engine/scoring-graph.ts makes a stale cached rewrite again, so only such a graph gets there).
it.each<[string, (model: ModelProto) => void, string]>([
  [
    // decide_label_index declared [N, 3]: the (row, position, token) triples of the GatherND head
    // that CUDA graphs could not replay (version 3).
    'a 2-D label index',
    (model) => {
      const index = model.graph!.input!.find((i) => i.name === 'decide_label_index')!;
      index.type!.tensorType!.shape!.dim!.push(onnx.TensorShapeProto.Dimension.create({ dimValue: 3 }));
    },
    "decide_label_index must be a 1-D int64 tensor of flat indices (a 2-D one is a scoring graph made by an older version: load the model's own graph",
  ],
  [
    // decide_position_index: version 4 gathered each position's log-sum-exp by its slot row * K + k
    // from a ReduceMax/ReduceSum over the vocabulary; the input renamed back stands for it.
    'decide_position_index (version 4)',
    (model) => {
      const rename = (name: string) => (name === POSITION_TOKEN_INDEX_INPUT ? POSITION_INDEX_INPUT : name);
      for (const input of model.graph!.input!) input.name = rename(input.name!);
      for (const n of model.graph!.node!) n.input = n.input!.map(rename);
    },
    "decide_position_index is the scoring head of an older version (the head now takes decide_position_token_index): load the model's own graph",
  ],
])('the native engine refuses the scoring head of an older rewrite: %s', async (name, olden, message) => {
  const dir = await variantDir(`older-head-${name.replace(/[^a-z0-9]+/gi, '-')}`);
  const stock = findGraphFile(dir);
  const rewrite = rewriteLmHead(readFileSync(stock));
  if (rewrite.kind !== 'rewritten') throw new Error('the tiny graph takes the rewrite');
  const model = onnx.ModelProto.decode(rewrite.bytes);
  olden(model);
  const old = path.join(path.dirname(stock), 'older-head.onnx');
  writeFileSync(old, onnx.ModelProto.encode(model).finish());
  const engine = new (loadNativeModule().NativeEngine)();
  try {
    await expect(engine.load({ ...loadOptions(dir), modelPath: old })).rejects.toMatchObject({ code: 'ERR_MODEL_LOAD', message: expect.stringContaining(message) });
  } finally {
    engine.close();
  }
});
