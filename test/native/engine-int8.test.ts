/**
 * The engine's properties on an int8 model (make-model --dtype int8: projection and MLP weights as
 * 8-bit columns for MatMulInteger (u8 x u8) with each token's activation quantized on its own, the
 * LM head as 8-bit MatMulNBits blocks), on the tiny preset's weights:
 * - prefix reuse equals an independent fresh full-sequence run of the same int8 graph (onnxruntime-node
 *   JS API) within the int8 graph's own tolerance, which is fp32's: a token's result does not depend
 *   on the other tokens of its pass (DynamicQuantizeMatMul's per-tensor activation scale moved logits
 *   by 8.7e-2 between the same layouts, the reason it is not the default);
 * - a group alone and inside a batch, and a prefix-cache hit and miss, agree as in fp32;
 * - the LM-head rewrite applies (verified against the stock int8 graph) and the files are smaller;
 * - against the fp32 twin (same weights unquantized): probabilities close, the top option the same.
 */
import { readFileSync, statSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { u8s8Paths } from '../../src/engine/int8-rewrite.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { measureInt8Agreement } from '../../src/models/import/int8-agreement.js';
import { onnx } from '../../src/models/builder/onnx-writer.js';
import { PRESETS } from '../../src/models/builder/presets.js';
import { lastPositionLogits } from '../helpers/last-position-reference.js';
import { maxLogitDiff, randomGroups } from '../helpers/random-groups.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

/**
 * The int8 graph's own tolerance in label logits between two layouts of the same tokens (fresh row,
 * reused prefix, batched with other groups): fp32's, since every token is quantized on its own.
 */
const INT8_LAYOUT_TOLERANCE = 1e-4;

/** The sizes of the random groups these tests score. */
const SIZES = { prefixTokens: 200, suffixes: 6, suffixTokens: 30, labels: 12 };

describe('Engine on the tiny int8 model', () => {
  let int8Dir: string;
  let fp32Dir: string;
  let engine: Engine;

  beforeAll(async () => {
    fp32Dir = await tinyModelDir();
    int8Dir = await tinyModelDir({}, 'int8');
    engine = await Engine.load({ modelDir: int8Dir, threads: 1 });
  });
  afterAll(() => engine?.close());

  it('stores the projections and MLP as 8-bit columns (uint8 around 128), the LM head as 8-bit blocks; decision.json says so; the rewrite applies', () => {
    const model = onnx.ModelProto.decode(readFileSync(path.join(int8Dir, 'onnx', 'model.onnx')));
    const ops = new Map<string, number>();
    for (const n of model.graph!.node!) ops.set(n.opType!, (ops.get(n.opType!) ?? 0) + 1);
    // 2 layers x (q, k, v, o, gate, up, down); the LM head is MatMulNBits.
    expect(ops.get('MatMulInteger')).toBe(14);
    expect(ops.get('MatMulNBits')).toBe(1);
    // Activations quantized once per input: q/k/v share one, gate/up another, o and down one each.
    expect(ops.get('ReduceMax')).toBe(2 * 4);
    const { hiddenSize: h, intermediateSize: inter, vocabSize: vocab } = PRESETS.tiny!;
    const byName = new Map(model.graph!.initializer!.map((t) => [t.name!, t]));
    // uint8 weights: u8 x u8 GEMMs, exact on every CPU (test/native/int8-matmul.test.ts).
    expect(byName.get('model.layers.0.mlp.up_proj.weight')!.dataType).toBe(onnx.TensorProto.DataType.UINT8);
    const mmi = model.graph!.node!.find((n) => n.opType === 'MatMulInteger')!;
    expect(mmi.input).toHaveLength(4);
    expect(byName.get('model.layers.0.mlp.up_proj.weight')!.dims!.map(Number)).toEqual([h, inter]);
    expect(byName.get('model.layers.0.mlp.up_proj.weight_scale')!.dims!.map(Number)).toEqual([inter]);
    // The head: [N, K / block, block] bytes (block 64: the largest power of two <= 128 dividing K = 64).
    expect(byName.get('lm_head.weight')!.dataType).toBe(onnx.TensorProto.DataType.UINT8);
    expect(byName.get('lm_head.weight')!.dims!.map(Number)).toEqual([vocab, 1, h]);
    expect(byName.get('model.embed_tokens.weight')!.dataType).toBe(onnx.TensorProto.DataType.FLOAT);
    const decision = JSON.parse(readFileSync(path.join(int8Dir, 'decision.json'), 'utf8'));
    expect(decision.builder.dtype).toBe('int8');
    expect(decision.builder.int8.scheme).toEqual({ kernel: 'rowq-u8', lmHead: 'nbits8', block: 128 });
    expect(engine.info.hasLogitsIndex).toBe(true);
    // The quantized weights take a quarter of their fp32 bytes; the fp32 embedding keeps the rest.
    const size = (dir: string) => statSync(path.join(dir, 'onnx', 'model.onnx')).size;
    const embeddingBytes = PRESETS.tiny!.vocabSize * PRESETS.tiny!.hiddenSize * 4;
    expect(size(int8Dir) - embeddingBytes).toBeLessThan(0.3 * (size(fp32Dir) - embeddingBytes));
  });

  it('prefix reuse equals a fresh full-sequence run of the int8 graph, within its tolerance', async () => {
    engine.clearPrefixCache();
    const groups = randomGroups(1, 3, SIZES);
    const scores = await engine.score(groups);
    let worst = 0;
    for (let g = 0; g < groups.length; g++) {
      for (let s = 0; s < groups[g]!.suffixes.length; s++) {
        const suffix = groups[g]!.suffixes[s]!;
        const full = Int32Array.from([...groups[g]!.prefix, ...suffix.tokens]);
        const reference = await lastPositionLogits(int8Dir, full);
        suffix.labels.forEach((label, k) => (worst = Math.max(worst, Math.abs(scores[g]![s]!.labelLogits[k]! - reference[label]!))));
      }
    }
    expect(worst).toBeLessThan(INT8_LAYOUT_TOLERANCE);
  });

  it('a group scores the same alone and inside a batch', async () => {
    const [target, ...others] = randomGroups(11, 4, SIZES);
    engine.clearPrefixCache();
    const alone = await engine.score([target!]);
    engine.clearPrefixCache();
    const mixed = await engine.score([others[0]!, target!, others[1]!, others[2]!]);
    alone[0]!.forEach((score, s) => expect(maxLogitDiff(score.labelLogits, mixed[1]![s]!.labelLogits)).toBeLessThan(1e-5));
  });

  it('a prefix-cache hit gives the logits of the miss and counts as reused', async () => {
    const groups = randomGroups(21, 2, SIZES);
    engine.clearPrefixCache();
    const miss = await engine.score(groups);
    const before = engine.counters();
    const hit = await engine.score(groups);
    const after = engine.counters();
    expect(after.prefixTokensComputed - before.prefixTokensComputed).toBe(0);
    expect(after.cachedTokens - before.cachedTokens).toBe(groups.reduce((n, g) => n + g.prefix.length, 0));
    miss.forEach((group, g) => group.forEach((score, s) => expect(maxLogitDiff(score.labelLogits, hit[g]![s]!.labelLogits)).toBeLessThan(1e-5)));
  });

  it('agrees with its fp32 twin on generated prompts (what make-model/import-model --dtype int8 print)', async () => {
    const a = await measureInt8Agreement(int8Dir, fp32Dir, { threads: 1, states: 3, questionsPerState: 4, stateTokens: 120 });
    expect(a.rows).toBe(12);
    expect(a.maxAbsProbDiff).toBeGreaterThan(0); // really quantized
    expect(a.maxAbsProbDiff).toBeLessThan(2e-2);
    expect(a.topAgreeing).toBe(12);
  });

  it('the fused graph in int8 (opset 23: its activation quantization takes ReduceMax axes as an input) agrees with its fp32 twin', async () => {
    const fusedInt8 = await tinyModelDir({ attention: 'fused' }, 'int8');
    const model = onnx.ModelProto.decode(await readFile(path.join(fusedInt8, 'onnx', 'model.onnx')));
    expect(model.opsetImport).toContainEqual(expect.objectContaining({ domain: '', version: 23 }));
    const reduceMax = model.graph!.node!.filter((n) => n.opType === 'ReduceMax');
    expect(reduceMax.length).toBeGreaterThan(0);
    for (const n of reduceMax) expect(n.input).toHaveLength(2);
    const a = await measureInt8Agreement(fusedInt8, await tinyModelDir({ attention: 'fused' }), { threads: 1, states: 3, questionsPerState: 4, stateTokens: 120 });
    expect(a.maxAbsProbDiff).toBeGreaterThan(0);
    expect(a.maxAbsProbDiff).toBeLessThan(2e-2);
    expect(a.topAgreeing).toBe(12);
    // The u8 x s8 rewrite (forced here: any CPU) finds every one of its row quantizations, axes as
    // an input and all, and replaces each by one RowQuantize.
    const engine = await Engine.load({ modelDir: fusedInt8, threads: 1, int8Path: 'u8s8' });
    engine.close();
    const rewritten = onnx.ModelProto.decode(await readFile(u8s8Paths(path.join(fusedInt8, 'onnx', 'model.onnx')).graph));
    const count = (op: string) => rewritten.graph!.node!.filter((n) => n.opType === op).length;
    expect(count('RowQuantize')).toBe(reduceMax.length);
    expect(count('ReduceMax') + count('Round')).toBe(0);
  });

  it('the service warns when it loads an int8 model written with int8 weights (u8 x s8), not for the current kernel', async () => {
    const tmp = await mkdtemp(path.join(os.tmpdir(), 'decide-int8-warning-'));
    try {
      const oldDir = path.join(tmp, 'old', 'svc-alpha-2026-10');
      const newDir = path.join(tmp, 'new', 'svc-alpha-2026-10');
      await cp(int8Dir, oldDir, { recursive: true });
      await cp(int8Dir, newDir, { recursive: true });
      // What --dtype int8 recorded before the u8 x u8 kernel.
      const decision = JSON.parse(await readFile(path.join(oldDir, 'decision.json'), 'utf8'));
      decision.builder.int8.scheme.kernel = 'rowq';
      await writeFile(path.join(oldDir, 'decision.json'), JSON.stringify(decision));
      for (const [dir, warned] of [[oldDir, true], [newDir, false]] as const) {
        const lines: string[] = [];
        const service = await DecisionService.open({ modelsDir: path.dirname(dir), ensureDefaultModel: false, log: (line) => lines.push(line) });
        try {
          await service.runtime('svc-alpha-2026-10');
          const warning = lines.filter((l) => l.includes('u8 x s8'));
          expect(warning).toHaveLength(warned ? 1 : 0);
          if (warned) expect(warning[0]).toMatch(/^model svc-alpha-2026-10: int8 weights multiplied as u8 x s8 \(kernel 'rowq'\).*re-create the model/);
        } finally {
          await service.close();
        }
      }
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });
});
