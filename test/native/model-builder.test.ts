/**
 * The generated decoder: file layout, Optimum I/O contract, determinism, and the attention semantics the
 * engine relies on (incremental == full, padding invariance, masked past), checked through the
 * onnxruntime-node JS API.
 */
import { mkdtemp, readFile, readdir, rm, stat, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import onnxProto from 'onnx-proto';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  GRAPH_VERSION,
  LM_HEAD_INPUT,
  LM_HEAD_NODE,
  PRESETS,
  float16ToFloat32,
  float32ToFloat16,
  makeModel,
  paramCount,
  writeTokenizerFiles,
  type ModelShape,
} from '../../src/models/builder/index.js';
import { EngineError } from '../../src/errors/engine-error.js';
import { TextTokenizer } from '../../src/runtime/tokenizer.js';
import { Rng } from '../../src/models/builder/rng.js';
import {
  asFloat32,
  emptyPast,
  referenceBatchLastLogits,
  referenceLastLogits,
  referenceModel,
  releaseReferenceSessions,
  type ReferenceModel,
} from '../helpers/reference.js';
import { TINY_SEED, tinyModelDir } from '../helpers/tiny-model.js';
import { QWEN3_TOKENIZER_FILES } from '../helpers/tokenizer-dir.js';

const { onnx } = onnxProto;
const tiny = PRESETS.tiny!;
const BUILT_FILES = ['config.json', 'decision.json', path.join('onnx', 'model.onnx'), 'tokenizer.json', 'tokenizer_config.json'];

let tinyDir: string;
let scratch: string;

beforeAll(async () => {
  tinyDir = await tinyModelDir();
  scratch = await mkdtemp(path.join(os.tmpdir(), 'model-builder-test-'));
}, 60_000);

afterAll(async () => {
  await releaseReferenceSessions();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

// ---------------------------------------------------------------- helpers

/** Deterministic token ids inside the tokenizer's range. */
function tokenIds(count: number, salt: number): number[] {
  const out: number[] = [];
  let x = (salt * 2654435761 + 12345) >>> 0;
  for (let i = 0; i < count; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out.push(x % tiny.vocabSize);
  }
  return out;
}

function int64(rows: number[][]): ort.Tensor {
  const width = rows[0]!.length;
  return new ort.Tensor('int64', BigInt64Array.from(rows.flat(), (v) => BigInt(v)), [rows.length, width]);
}

interface Forward {
  ids: number[][];
  mask: number[][];
  positions: number[][];
  past?: Record<string, ort.Tensor>;
}

async function forward(model: ReferenceModel, f: Forward): Promise<ort.InferenceSession.ReturnType> {
  return model.session.run({
    input_ids: int64(f.ids),
    attention_mask: int64(f.mask),
    position_ids: int64(f.positions),
    ...(f.past ?? emptyPast(model, f.ids.length)),
  });
}

/** present.* outputs renamed to the past_key_values.* inputs of the next step. */
function presentAsPast(model: ReferenceModel, out: ort.InferenceSession.ReturnType): Record<string, ort.Tensor> {
  const past: Record<string, ort.Tensor> = {};
  for (let i = 0; i < model.numLayers; i++) {
    for (const kind of ['key', 'value']) past[`past_key_values.${i}.${kind}`] = out[`present.${i}.${kind}`] as ort.Tensor;
  }
  return past;
}

function logitsAt(out: ort.InferenceSession.ReturnType, row: number, pos: number): Float32Array {
  const t = out.logits!;
  const [, seq, vocab] = t.dims as [number, number, number];
  return asFloat32(t).slice((row * seq + pos) * vocab, (row * seq + pos + 1) * vocab);
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

function stats(a: Float32Array): { min: number; max: number; std: number; finite: boolean } {
  let min = Infinity, max = -Infinity, sum = 0, sq = 0, finite = true;
  for (const v of a) {
    if (!Number.isFinite(v)) finite = false;
    min = Math.min(min, v);
    max = Math.max(max, v);
    sum += v;
    sq += v * v;
  }
  const mean = sum / a.length;
  return { min, max, std: Math.sqrt(sq / a.length - mean * mean), finite };
}

/** The parts of a decoded ModelProto the tests read (protobufjs fills repeated fields and defaults). */
interface DecodedModel {
  irVersion: unknown;
  opsetImport: { domain: string; version: unknown }[];
  graph: {
    node: { name: string; opType: string; input: string[]; output: string[] }[];
    initializer: { name: string; dims: unknown[]; rawData: Uint8Array; dataLocation: number; externalData: { key: string; value: string }[] }[];
  };
}

async function decodeModel(dir: string): Promise<DecodedModel> {
  return onnx.ModelProto.decode(await readFile(path.join(dir, 'onnx', 'model.onnx'))) as unknown as DecodedModel;
}

const num = (x: unknown): number => (typeof x === 'number' ? x : (x as { toNumber(): number }).toNumber());

async function filesOf(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(path.relative(dir, path.join(entry.parentPath, entry.name)));
  }
  return out.filter((f) => !f.startsWith('.')).sort();
}

/** A past whose cache positions [keep, total) hold garbage, for `batch` rows. */
function sliceIntoPast(
  model: ReferenceModel,
  rowsPresent: ort.InferenceSession.ReturnType[],
  total: number,
  garbage: Rng,
): Record<string, ort.Tensor> {
  const { numKvHeads: kvh, headDim: hd } = model;
  const past: Record<string, ort.Tensor> = {};
  for (let i = 0; i < model.numLayers; i++) {
    for (const kind of ['key', 'value']) {
      const data = new Float32Array(rowsPresent.length * kvh * total * hd);
      garbage.fillNormal(data, 50);
      rowsPresent.forEach((out, b) => {
        const src = out[`present.${i}.${kind}`]!;
        const len = src.dims[2]!;
        const s = src.data as Float32Array;
        for (let h = 0; h < kvh; h++) {
          for (let t = 0; t < len; t++) {
            const from = (h * len + t) * hd;
            data.set(s.subarray(from, from + hd), ((b * kvh + h) * total + t) * hd);
          }
        }
      });
      past[`past_key_values.${i}.${kind}`] = new ort.Tensor('float32', data, [rowsPresent.length, kvh, total, hd]);
    }
  }
  return past;
}


/**
 * Hugging Face Qwen3ForCausalLM (eager attention) for one unpadded row, written plainly in float64:
 * the independent definition the ONNX graph must agree with. MatMul weights are [in, out].
 */
function qwen3Reference(shape: ModelShape, w: (name: string) => Float32Array, ids: number[]): Float64Array {
  const { hiddenSize: h, numHeads: nh, numKvHeads: kvh, headDim: hd, intermediateSize: inter, vocabSize: vocab } = shape;
  const matmul = (x: ArrayLike<number>, m: Float32Array, inDim: number, outDim: number) => {
    const y = new Float64Array(outDim);
    for (let i = 0; i < inDim; i++) for (let o = 0; o < outDim; o++) y[o]! += x[i]! * m[i * outDim + o]!;
    return y;
  };
  const rms = (x: Float64Array, weight: Float32Array, from = 0, len = x.length) => {
    let ms = 0;
    for (let i = 0; i < len; i++) ms += x[from + i]! ** 2;
    const inv = 1 / Math.sqrt(ms / len + shape.rmsNormEps);
    for (let i = 0; i < len; i++) x[from + i] = x[from + i]! * inv * weight[i]!;
  };
  const rope = (x: Float64Array, heads: number, pos: number) => {
    for (let hh = 0; hh < heads; hh++) {
      const v = x.slice(hh * hd, (hh + 1) * hd);
      for (let d = 0; d < hd; d++) {
        const angle = pos / shape.ropeTheta ** ((2 * (d % (hd / 2))) / hd);
        const rotated = d < hd / 2 ? -v[d + hd / 2]! : v[d - hd / 2]!;
        x[hh * hd + d] = v[d]! * Math.cos(angle) + rotated * Math.sin(angle);
      }
    }
  };
  const embed = w('model.embed_tokens.weight');
  let xs = ids.map((id) => Float64Array.from(embed.subarray(id * h, (id + 1) * h)));
  for (let l = 0; l < shape.numLayers; l++) {
    const p = `model.layers.${l}`;
    const qs: Float64Array[] = [], ks: Float64Array[] = [], vs: Float64Array[] = [];
    xs.forEach((x, t) => {
      const xn = Float64Array.from(x);
      rms(xn, w(`${p}.input_layernorm.weight`));
      const q = matmul(xn, w(`${p}.self_attn.q_proj.weight`), h, nh * hd);
      const k = matmul(xn, w(`${p}.self_attn.k_proj.weight`), h, kvh * hd);
      for (let hh = 0; hh < nh; hh++) rms(q, w(`${p}.self_attn.q_norm.weight`), hh * hd, hd);
      for (let hh = 0; hh < kvh; hh++) rms(k, w(`${p}.self_attn.k_norm.weight`), hh * hd, hd);
      rope(q, nh, t);
      rope(k, kvh, t);
      qs.push(q);
      ks.push(k);
      vs.push(matmul(xn, w(`${p}.self_attn.v_proj.weight`), h, kvh * hd));
    });
    xs = xs.map((x, t) => {
      const attn = new Float64Array(nh * hd);
      for (let hh = 0; hh < nh; hh++) {
        const kv = Math.floor(hh / (nh / kvh)); // repeat_kv: head hh reads kv head hh // n_rep
        const scores = Array.from({ length: t + 1 }, (_, j) => {
          let dot = 0;
          for (let d = 0; d < hd; d++) dot += qs[t]![hh * hd + d]! * ks[j]![kv * hd + d]!;
          return dot / Math.sqrt(hd);
        });
        const max = Math.max(...scores);
        const e = scores.map((sc) => Math.exp(sc - max));
        const z = e.reduce((a, b) => a + b, 0);
        for (let j = 0; j <= t; j++) for (let d = 0; d < hd; d++) attn[hh * hd + d]! += (e[j]! / z) * vs[j]![kv * hd + d]!;
      }
      const o = matmul(attn, w(`${p}.self_attn.o_proj.weight`), nh * hd, h);
      const mid = x.map((v, i) => v + o[i]!);
      const mn = Float64Array.from(mid);
      rms(mn, w(`${p}.post_attention_layernorm.weight`));
      const gate = matmul(mn, w(`${p}.mlp.gate_proj.weight`), h, inter);
      const up = matmul(mn, w(`${p}.mlp.up_proj.weight`), h, inter);
      const act = gate.map((g, i) => (g / (1 + Math.exp(-g))) * up[i]!);
      const down = matmul(act, w(`${p}.mlp.down_proj.weight`), inter, h);
      return mid.map((v, i) => v + down[i]!);
    });
  }
  const last = Float64Array.from(xs[xs.length - 1]!);
  rms(last, w('model.norm.weight'));
  return matmul(last, w('lm_head.weight'), h, vocab);
}

// ---------------------------------------------------------------- the tiny model

describe('tiny model: files and I/O contract', () => {
  it('writes the Hugging Face layout with config, decision and the Qwen3 tokenizer', async () => {
    // Other components may cache derived files beside the model (e.g. a rewritten graph), so check a
    // fresh build for the exact list and the shared directory for inclusion.
    expect(await filesOf(tinyDir)).toEqual(expect.arrayContaining(BUILT_FILES));
    const config = JSON.parse(await readFile(path.join(tinyDir, 'config.json'), 'utf8'));
    expect(config).toMatchObject({
      architectures: ['Qwen3ForCausalLM'],
      model_type: 'qwen3',
      hidden_size: 64,
      intermediate_size: 192,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: 16,
      vocab_size: tiny.vocabSize,
      max_position_embeddings: 4096,
      rope_theta: 1e6,
      rms_norm_eps: 1e-6,
      tie_word_embeddings: false,
      torch_dtype: 'float32',
      // The cut tokenizer numbers the special tokens right after its BPE tokens (26 of them).
      bos_token_id: tiny.vocabSize - 26, // <|endoftext|>
      eos_token_id: tiny.vocabSize - 24, // <|im_end|>
    });
    expect(JSON.parse(await readFile(path.join(tinyDir, 'decision.json'), 'utf8'))).toEqual({
      builder: { preset: 'tiny', seed: TINY_SEED, dtype: 'fp32', graphVersion: GRAPH_VERSION, nodesPerLayer: 66 },
      calibration: { temperature: { noul: 1, choice: 1, score: 1 } },
    });
    const tokCfg = JSON.parse(await readFile(path.join(tinyDir, 'tokenizer_config.json'), 'utf8'));
    const sourceCfg = JSON.parse(await readFile(path.join(QWEN3_TOKENIZER_FILES, 'tokenizer_config.json'), 'utf8'));
    expect(tokCfg.chat_template).toContain('<|im_start|>');
    expect(tokCfg.chat_template).toBe(sourceCfg.chat_template);
  });

  it("its tokenizer is Qwen3's cut to the model's vocabulary: same ids where the merges are kept, specials renumbered, every id inside the model", async () => {
    const cut = await TextTokenizer.load(tinyDir);
    const full = await TextTokenizer.load(QWEN3_TOKENIZER_FILES);
    expect(full.vocabSize).toBe(151_669);
    expect(cut.vocabSize).toBe(tiny.vocabSize);
    // Common words and the answer labels keep their Qwen3 ids and stay single tokens.
    for (const text of ['hello world', ' yes', ' no', ' A', ' Z', ' 7', '\n']) {
      expect(Array.from(await cut.encode(text)), text).toEqual(Array.from(await full.encode(text)));
    }
    expect((await cut.encode(' yes')).length).toBe(1);
    // Special tokens keep their spelling, numbered after the 16,358 BPE tokens, in Qwen3's order.
    expect(cut.tokenToId('<|endoftext|>')).toBe(tiny.vocabSize - 26);
    expect(cut.tokenToId('<|im_start|>')).toBe(tiny.vocabSize - 25);
    expect(cut.tokenToId('<|im_end|>')).toBe(tiny.vocabSize - 24);
    // Any text still round-trips, in more pieces where it needed a later merge.
    const text = '<|im_start|>user\nAntidisestablishmentarianism – naïve café 😀 東京 1182<|im_end|>';
    const ids = await cut.encode(text);
    expect(await cut.decode(ids)).toBe(text);
    expect(ids.length).toBeGreaterThan((await full.encode(text)).length);
    expect(Math.max(...ids)).toBeLessThan(tiny.vocabSize);
  });

  it('a vocabulary as large as the tokenizer gets the Qwen3 files byte for byte; one below its 256 bytes is refused', async () => {
    const dir = await mkdtemp(path.join(scratch, 'tok-'));
    await writeTokenizerFiles(dir, 151_936);
    for (const f of ['tokenizer.json', 'tokenizer_config.json']) {
      expect((await readFile(path.join(dir, f))).equals(await readFile(path.join(QWEN3_TOKENIZER_FILES, f))), f).toBe(true);
    }
    await expect(writeTokenizerFiles(dir, 200)).rejects.toThrow(/too small for the Qwen3 tokenizer: it needs at least 282 ids/);
  });

  it('loads in onnxruntime-node with Optimum input/output names, types and symbolic dims', async () => {
    const { session } = await referenceModel(tinyDir);
    const kv = (prefix: string) => [0, 1].flatMap((i) => [`${prefix}.${i}.key`, `${prefix}.${i}.value`]);
    expect(session.inputNames).toEqual(['input_ids', 'attention_mask', 'position_ids', ...kv('past_key_values')]);
    expect(session.outputNames).toEqual(['logits', ...kv('present')]);
    const meta = Object.fromEntries(
      [...session.inputMetadata, ...session.outputMetadata].map((m) => [m.name, m.isTensor ? { type: m.type, shape: m.shape } : null]),
    );
    expect(meta.input_ids).toEqual({ type: 'int64', shape: ['batch_size', 'sequence_length'] });
    expect(meta.attention_mask).toEqual({ type: 'int64', shape: ['batch_size', 'total_sequence_length'] });
    expect(meta.position_ids).toEqual({ type: 'int64', shape: ['batch_size', 'sequence_length'] });
    for (const name of kv('past_key_values')) {
      expect(meta[name]).toEqual({ type: 'float32', shape: ['batch_size', 2, 'past_sequence_length', 16] });
    }
    expect(meta.logits).toEqual({ type: 'float32', shape: ['batch_size', 'sequence_length', tiny.vocabSize] });
    for (const name of kv('present')) {
      expect(meta[name]).toEqual({ type: 'float32', shape: ['batch_size', 2, 'total_sequence_length', 16] });
    }
  });

  it('names nodes like an Optimum export, with a separate [hidden, vocab] LM head the rewrite can find', async () => {
    const model = await decodeModel(tinyDir);
    expect(num(model.irVersion)).toBe(8);
    expect(model.opsetImport.map((o) => [o.domain, num(o.version)])).toEqual([['', 17]]);
    const nodes = new Map(model.graph.node.map((n) => [n.name, n]));
    const head = nodes.get(LM_HEAD_NODE)!;
    expect(head.opType).toBe('MatMul');
    expect(head.input).toEqual([LM_HEAD_INPUT, 'lm_head.weight']);
    expect(head.output).toEqual(['logits']);
    const producer = model.graph.node.find((n) => n.output.includes(LM_HEAD_INPUT))!;
    expect(producer.name).toBe('/model/norm/Mul');
    for (const name of [
      '/model/embed_tokens/Gather',
      '/model/layers.0/self_attn/q_proj/MatMul',
      '/model/layers.1/self_attn/k_proj/MatMul',
      '/model/layers.1/self_attn/v_proj/MatMul',
      '/model/layers.1/self_attn/o_proj/MatMul',
      '/model/layers.0/mlp/gate_proj/MatMul',
      '/model/layers.0/mlp/up_proj/MatMul',
      '/model/layers.0/mlp/down_proj/MatMul',
    ]) {
      expect(nodes.has(name), name).toBe(true);
    }
    const inits = new Map(model.graph.initializer.map((t) => [t.name, t]));
    expect(inits.get('lm_head.weight')!.dims.map(num)).toEqual([64, tiny.vocabSize]);
    expect(inits.get('model.embed_tokens.weight')!.dims.map(num)).toEqual([tiny.vocabSize, 64]);
    expect(inits.get('model.layers.0.self_attn.q_norm.weight')!.dims.map(num)).toEqual([16]);
    // present KV is Concat(past, new) on the sequence axis.
    const concat = model.graph.node.find((n) => n.output.includes('present.1.value'))!;
    expect(concat.opType).toBe('Concat');
    expect(concat.input[0]).toBe('past_key_values.1.value');
  });

  it('returns logits [B, S, vocab] and present [B, kv_heads, past + S, head_dim], finite and varied', async () => {
    const model = await referenceModel(tinyDir);
    const batch = 2, seq = 3, pastLen = 4;
    const past: Record<string, ort.Tensor> = {};
    const rng = new Rng(7, 'past');
    for (let i = 0; i < 2; i++) {
      for (const kind of ['key', 'value']) {
        const data = new Float32Array(batch * 2 * pastLen * 16);
        rng.fillNormal(data, 1);
        past[`past_key_values.${i}.${kind}`] = new ort.Tensor('float32', data, [batch, 2, pastLen, 16]);
      }
    }
    const out = await forward(model, {
      ids: [tokenIds(seq, 1), tokenIds(seq, 2)],
      mask: [Array(pastLen + seq).fill(1), Array(pastLen + seq).fill(1)],
      positions: [[4, 5, 6], [4, 5, 6]],
      past,
    });
    expect(out.logits!.dims).toEqual([batch, seq, tiny.vocabSize]);
    for (let i = 0; i < 2; i++) {
      expect(out[`present.${i}.key`]!.dims).toEqual([batch, 2, pastLen + seq, 16]);
      expect(out[`present.${i}.value`]!.dims).toEqual([batch, 2, pastLen + seq, 16]);
      // The past is passed through unchanged at the front of present.
      const pastData = past[`past_key_values.${i}.key`]!.data as Float32Array;
      const present = out[`present.${i}.key`]!.data as Float32Array;
      expect(present.subarray(0, pastLen * 16)).toEqual(pastData.subarray(0, pastLen * 16));
    }
    const first = logitsAt(out, 0, 0);
    const s = stats(asFloat32(out.logits!));
    expect(s.finite).toBe(true);
    expect(s.std).toBeGreaterThan(1);
    expect(s.std).toBeLessThan(4);
    // Positions and rows differ, and the distribution over tokens is not flat.
    expect(maxAbsDiff(first, logitsAt(out, 0, 1))).toBeGreaterThan(0.5);
    expect(maxAbsDiff(first, logitsAt(out, 1, 0))).toBeGreaterThan(0.5);
    expect(stats(first).max - stats(first).min).toBeGreaterThan(8);
  });

  it('is deterministic: same seed gives identical bytes, another seed different weights', async () => {
    const again = (await makeModel({ preset: 'tiny', outDir: path.join(scratch, 'tiny-seed1'), seed: TINY_SEED })).dir;
    const other = (await makeModel({ preset: 'tiny', outDir: path.join(scratch, 'tiny-seed2'), seed: 2 })).dir;
    expect(await filesOf(again)).toEqual(BUILT_FILES);
    expect(await filesOf(other)).toEqual(BUILT_FILES);
    for (const f of BUILT_FILES) {
      expect((await readFile(path.join(again, f))).equals(await readFile(path.join(tinyDir, f))), f).toBe(true);
    }
    const a = await readFile(path.join(tinyDir, 'onnx', 'model.onnx'));
    const b = await readFile(path.join(other, 'onnx', 'model.onnx'));
    expect(b.length).toBe(a.length);
    expect(a.equals(b)).toBe(false);
    expect(await readFile(path.join(other, 'config.json'), 'utf8')).toBe(await readFile(path.join(tinyDir, 'config.json'), 'utf8'));
    const ids = tokenIds(6, 3);
    expect(maxAbsDiff(await referenceLastLogits(tinyDir, ids), await referenceLastLogits(other, ids))).toBeGreaterThan(0.5);
  }, 30_000);
});

describe('tiny model: attention semantics', () => {
  it('computes what a plain float64 implementation of HF Qwen3 computes (repeat_kv, rotate_half, q/k norm, SwiGLU)', async () => {
    const model = await decodeModel(tinyDir);
    const weights = new Map(
      model.graph.initializer.map((t) => [t.name, new Float32Array(Uint8Array.from(t.rawData).buffer)]),
    );
    const ids = tokenIds(7, 20);
    const expected = qwen3Reference(tiny, (name) => weights.get(name)!, ids);
    const actual = await referenceLastLogits(tinyDir, ids);
    let worst = 0;
    for (let i = 0; i < actual.length; i++) worst = Math.max(worst, Math.abs(actual[i]! - expected[i]!));
    expect(worst).toBeLessThan(1e-3);
  });

  it('incremental decoding with present fed back as past equals the full-sequence run', async () => {
    const model = await referenceModel(tinyDir);
    const ids = tokenIds(13, 4);
    const full = await referenceLastLogits(tinyDir, ids);
    for (const split of [1, 7, 12]) {
      const first = await forward(model, {
        ids: [ids.slice(0, split)],
        mask: [Array(split).fill(1)],
        positions: [Array.from({ length: split }, (_, i) => i)],
      });
      const rest = ids.slice(split);
      const second = await forward(model, {
        ids: [rest],
        mask: [Array(ids.length).fill(1)],
        positions: [rest.map((_, i) => split + i)],
        past: presentAsPast(model, first),
      });
      expect(maxAbsDiff(logitsAt(second, 0, rest.length - 1), full), `split ${split}`).toBeLessThan(1e-4);
    }
  });

  it('a right-padded row scores the same as alone, and its batch neighbour too', async () => {
    const short = Int32Array.from(tokenIds(5, 5));
    const long = Int32Array.from(tokenIds(9, 6));
    const [shortBatched, longBatched] = await referenceBatchLastLogits(tinyDir, [short, long]);
    expect(maxAbsDiff(shortBatched!, await referenceLastLogits(tinyDir, short))).toBeLessThan(1e-5);
    expect(maxAbsDiff(longBatched!, await referenceLastLogits(tinyDir, long))).toBeLessThan(1e-5);
    // Sanity: the two rows really differ, so the comparison is not vacuous.
    expect(maxAbsDiff(shortBatched!, longBatched!)).toBeGreaterThan(0.5);
  });

  it('masked garbage in the past is ignored when position_ids continue at the real length', async () => {
    const model = await referenceModel(tinyDir);
    const prefix = tokenIds(4, 7);
    const suffix = tokenIds(3, 8);
    const clean = await referenceLastLogits(tinyDir, [...prefix, ...suffix]);
    const prefixOut = await forward(model, { ids: [prefix], mask: [[1, 1, 1, 1]], positions: [[0, 1, 2, 3]] });
    const pastLen = 7;
    const out = await forward(model, {
      ids: [suffix],
      mask: [[1, 1, 1, 1, 0, 0, 0, 1, 1, 1]],
      positions: [[4, 5, 6]],
      past: sliceIntoPast(model, [prefixOut], pastLen, new Rng(9, 'garbage')),
    });
    expect(maxAbsDiff(logitsAt(out, 0, 2), clean)).toBeLessThan(1e-4);
  });

  it("the engine's layout (prefixes padded to P_max, suffixes right-padded) matches fresh full runs per row", async () => {
    const model = await referenceModel(tinyDir);
    const prefixes = [tokenIds(4, 10), tokenIds(7, 11)];
    const suffixes = [tokenIds(3, 12), tokenIds(2, 13)];
    const pMax = 7, sMax = 3;
    const prefixOuts = await Promise.all(
      prefixes.map((p) => forward(model, { ids: [p], mask: [p.map(() => 1)], positions: [p.map((_, i) => i)] })),
    );
    const rowMask = (r: number) => [
      ...Array.from({ length: pMax }, (_, j) => (j < prefixes[r]!.length ? 1 : 0)),
      ...Array.from({ length: sMax }, (_, j) => (j < suffixes[r]!.length ? 1 : 0)),
    ];
    const out = await forward(model, {
      ids: suffixes.map((s) => [...s, ...Array(sMax - s.length).fill(0)]),
      mask: [rowMask(0), rowMask(1)],
      positions: prefixes.map((p) => Array.from({ length: sMax }, (_, i) => p.length + i)),
      past: sliceIntoPast(model, prefixOuts, pMax, new Rng(10, 'garbage')),
    });
    for (let r = 0; r < 2; r++) {
      const fresh = await referenceLastLogits(tinyDir, [...prefixes[r]!, ...suffixes[r]!]);
      expect(maxAbsDiff(logitsAt(out, r, suffixes[r]!.length - 1), fresh), `row ${r}`).toBeLessThan(1e-4);
    }
  });

  it('a fully masked row yields finite logits, not NaN', async () => {
    const model = await referenceModel(tinyDir);
    const out = await forward(model, {
      ids: [tokenIds(3, 14), tokenIds(3, 15)],
      mask: [[1, 1, 1], [0, 0, 0]],
      positions: [[0, 1, 2], [0, 1, 2]],
    });
    expect(stats(asFloat32(out.logits!)).finite).toBe(true);
  });
});

describe('tiny model: storage variants', () => {
  it('external data (forced) loads and gives the same logits as the inline file', async () => {
    const { dir } = await makeModel({ preset: 'tiny', outDir: path.join(scratch, 'tiny-external'), seed: TINY_SEED, externalData: true });
    const onnxDir = path.join(dir, 'onnx');
    expect((await readdir(onnxDir)).sort()).toEqual(['model.onnx', 'model.onnx_data']);
    expect((await stat(path.join(onnxDir, 'model.onnx'))).size).toBeLessThan(200_000);
    const model = await decodeModel(dir);
    const head = model.graph.initializer.find((t) => t.name === 'lm_head.weight')!;
    expect(head.dataLocation).toBe(onnx.TensorProto.DataLocation.EXTERNAL);
    const ext = Object.fromEntries(head.externalData.map((e) => [e.key, e.value]));
    expect(ext.location).toBe('model.onnx_data');
    expect(Number(ext.offset) % 4096).toBe(0);
    expect(Number(ext.length)).toBe(64 * tiny.vocabSize * 4);
    const ids = tokenIds(8, 16);
    expect(maxAbsDiff(await referenceLastLogits(dir, ids), await referenceLastLogits(tinyDir, ids))).toBe(0);
  }, 30_000);

  it('fp16 builds an fp16 graph (fp16 past/present/logits) that ORT CPU runs close to fp32', async () => {
    const { dir } = await makeModel({ preset: 'tiny', outDir: path.join(scratch, 'tiny-fp16'), seed: TINY_SEED, dtype: 'fp16' });
    const config = JSON.parse(await readFile(path.join(dir, 'config.json'), 'utf8'));
    expect(config.torch_dtype).toBe('float16');
    expect((await stat(path.join(dir, 'onnx', 'model.onnx'))).size).toBeLessThan(
      (await stat(path.join(tinyDir, 'onnx', 'model.onnx'))).size * 0.51,
    );
    const model = await referenceModel(dir);
    expect(model.floatType).toBe('float16');
    const types = Object.fromEntries(
      [...model.session.inputMetadata, ...model.session.outputMetadata].map((m) => [m.name, m.isTensor ? m.type : null]),
    );
    expect(types).toMatchObject({
      input_ids: 'int64',
      'past_key_values.0.key': 'float16',
      logits: 'float16',
      'present.1.value': 'float16',
    });
    const ids = tokenIds(10, 17);
    const half = await referenceLastLogits(dir, ids);
    const full = await referenceLastLogits(tinyDir, ids);
    expect(stats(half).finite).toBe(true);
    expect(maxAbsDiff(half, full)).toBeLessThan(0.1);
  }, 30_000);

  it('rebuilding into an existing model directory needs force and replaces it atomically; other directories are refused', async () => {
    const out = path.join(scratch, 'replace', 'model');
    await makeModel({ preset: 'tiny', outDir: out, seed: 3, shapeOverrides: { vocabSize: 512 } });
    // In the library's terms (the command names its flags: test/e2e/make-model.test.ts), with a code.
    await expect(makeModel({ preset: 'tiny', outDir: out, seed: 4, shapeOverrides: { vocabSize: 512 } })).rejects.toMatchObject({
      code: 'ERR_INPUT',
      message: `${out} already exists; choose another outDir (a new dated id) or pass force: true to replace it`,
    });
    expect(JSON.parse(await readFile(path.join(out, 'decision.json'), 'utf8')).builder.seed).toBe(3);
    await makeModel({ preset: 'tiny', outDir: out, seed: 4, shapeOverrides: { vocabSize: 512 }, force: true });
    expect(await readdir(path.dirname(out))).toEqual(['model']);
    const decision = JSON.parse(await readFile(path.join(out, 'decision.json'), 'utf8'));
    expect(decision.builder).toEqual({ preset: 'tiny', seed: 4, dtype: 'fp32', graphVersion: GRAPH_VERSION, shapeOverrides: { vocabSize: 512 }, nodesPerLayer: 66 });

    const notModel = path.join(scratch, 'not-a-model');
    await mkdir(notModel);
    await writeFile(path.join(notModel, 'notes.txt'), 'keep me');
    await expect(makeModel({ preset: 'tiny', outDir: notModel, force: true })).rejects.toThrow(/not a model directory/);
    expect(await readdir(notModel)).toEqual(['notes.txt']);
    await expect(
      makeModel({ preset: 'tiny', outDir: path.join(scratch, 'x'), shapeOverrides: { numKvHeads: 3 } }),
    ).rejects.toMatchObject({ code: 'ERR_INPUT', message: expect.stringMatching(/multiple of numKvHeads/) });
    expect((await readdir(scratch)).filter((f) => f.includes('.tmp-'))).toEqual([]);
  }, 30_000);
});

describe('makeModel options, as a JavaScript caller may pass them', () => {
  // Each refused before anything is written, as an EngineError ERR_INPUT naming the option.
  const refusals: Array<[string, Record<string, unknown>, string]> = [
    ['a graph feature given beside features', { segmentIds: true }, "makeModel: unknown option 'segmentIds'"],
    ['an unknown option', { bogus: 1 }, "makeModel: unknown option 'bogus'"],
    ['an unknown feature', { features: { segmentId: true } }, "makeModel: features: unknown option 'segmentId' (did you mean 'segmentIds'?)"],
    ['an unknown shape override', { shapeOverrides: { layers: 2 } }, "makeModel: shapeOverrides: unknown option 'layers'"],
    ['an unknown preset', { preset: 'nope' }, "makeModel: preset must be one of tiny, small, qwen3-0.6b, got 'nope'"],
    ['a fractional negative seed', { seed: -1.5 }, 'makeModel: seed must be a non-negative integer, got -1.5'],
    ['a seed as text', { seed: '3' }, "makeModel: seed must be a non-negative integer, got '3'"],
    ['an unknown dtype', { dtype: 'fp64' }, "makeModel: dtype must be fp32, fp16 or int8, got 'fp64'"],
    ['force as text', { force: 'yes' }, "makeModel: force must be true or false, got 'yes'"],
    ['no outDir', { outDir: undefined }, 'makeModel: outDir must be a path (a string), got undefined'],
    ['causal states without the fused graph', { features: { causalStates: true } }, "makeModel: features.causalStates: true needs features.attention: 'fused'"],
    ['causal states with a sliding window', { features: { causalStates: true, attention: 'fused', slidingWindow: { size: 8, layers: [true] } } }, 'makeModel: features.causalStates: true does not take a sliding window'],
  ];
  it.each(refusals)('%s is refused naming it, and nothing is written', async (_, given, message) => {
    const outDir = path.join(scratch, 'refused');
    const err = await makeModel({ preset: 'tiny', outDir, ...given } as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect(err).toMatchObject({ code: 'ERR_INPUT', message });
    await expect(stat(outDir)).rejects.toThrow(/ENOENT/);
  });

  it('an outDir that may not be written is an EngineError in the library\'s terms', async () => {
    const pinned = path.join(scratch, 'pinned', 'svc-test-2026-01');
    await makeModel({ preset: 'tiny', outDir: pinned, shapeOverrides: { vocabSize: 512 } });
    const err = await makeModel({ preset: 'tiny', outDir: pinned, force: true, shapeOverrides: { vocabSize: 512 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect(err).toMatchObject({ code: 'ERR_INPUT', message: expect.stringContaining('a pinned id never changes, force: true or not') });
    expect((err as Error).message).not.toMatch(/--force|--out/);
  }, 30_000);
});

// ---------------------------------------------------------------- the big presets, at reduced size

describe('presets', () => {
  it('qwen3-0.6b has the real Qwen3-0.6B numbers and ~0.44B body parameters', () => {
    expect(PRESETS['qwen3-0.6b']).toEqual({
      numLayers: 28,
      hiddenSize: 1024,
      numHeads: 16,
      numKvHeads: 8,
      headDim: 128,
      intermediateSize: 3072,
      vocabSize: 151936,
      maxPositionEmbeddings: 40960,
      ropeTheta: 1e6,
      rmsNormEps: 1e-6,
      tieWordEmbeddings: true,
    });
    const count = paramCount(PRESETS['qwen3-0.6b']!);
    expect(count.body).toBe(440_467_456);
    expect(count.embedding).toBe(151936 * 1024);
    expect(count.lmHead).toBe(0);
    expect(count.total / 1e9).toBeCloseTo(0.596, 3);
  });

  it('small is ~40M body parameters plus an untied head; tiny is tiny', () => {
    const small = paramCount(PRESETS.small!);
    expect(small.body).toBeGreaterThan(35e6);
    expect(small.body).toBeLessThan(45e6);
    expect(small.embedding).toBe(151936 * 512);
    expect(small.lmHead).toBe(151936 * 512);
    expect(paramCount(tiny).body).toBeLessThan(200_000);
  });

  const reduced: Partial<ModelShape> = { numLayers: 2, hiddenSize: 48, intermediateSize: 80, vocabSize: 1000 };
  for (const preset of ['small', 'qwen3-0.6b'] as const) {
    it(`${preset} (reduced width/vocab/layers) keeps its heads, context and rope in config and graph`, async () => {
      const shape = { ...PRESETS[preset]!, ...reduced };
      const { dir, shape: built } = await makeModel({ preset, outDir: path.join(scratch, preset), seed: 5, shapeOverrides: reduced });
      expect(built).toEqual(shape);
      const config = JSON.parse(await readFile(path.join(dir, 'config.json'), 'utf8'));
      expect(config).toMatchObject({
        hidden_size: 48,
        intermediate_size: 80,
        num_hidden_layers: 2,
        vocab_size: 1000,
        num_attention_heads: shape.numHeads,
        num_key_value_heads: shape.numKvHeads,
        head_dim: shape.headDim,
        max_position_embeddings: shape.maxPositionEmbeddings,
        rope_theta: 1e6,
        rms_norm_eps: 1e-6,
        tie_word_embeddings: shape.tieWordEmbeddings === true,
      });

      const model = await decodeModel(dir);
      const inits = new Map(model.graph.initializer.map((t) => [t.name, t]));
      const dims = (n: string) => inits.get(n)!.dims.map(num);
      const qDim = shape.numHeads * shape.headDim;
      const kvDim = shape.numKvHeads * shape.headDim;
      expect(dims('model.layers.1.self_attn.q_proj.weight')).toEqual([48, qDim]);
      expect(dims('model.layers.1.self_attn.k_proj.weight')).toEqual([48, kvDim]);
      expect(dims('model.layers.1.self_attn.o_proj.weight')).toEqual([qDim, 48]);
      expect(dims('model.layers.1.mlp.down_proj.weight')).toEqual([80, 48]);
      expect(dims('lm_head.weight')).toEqual([48, 1000]);
      const invFreq = new Float32Array(Uint8Array.from(inits.get('/model/rotary_emb/inv_freq')!.rawData).buffer);
      expect(invFreq.length).toBe(shape.headDim / 2);
      expect(invFreq[1]).toBeCloseTo(1e6 ** (-2 / shape.headDim), 6);
      const weightCount = [...inits.values()]
        .filter((t) => !t.name.startsWith('/'))
        .reduce((s, t) => s + t.dims.map(num).reduce((a, b) => a * b, 1), 0);
      const count = paramCount(shape);
      expect(weightCount).toBe(count.body + count.embedding + count.embedding);

      if (shape.tieWordEmbeddings) {
        // The tied head holds the transposed embedding.
        const embed = new Float32Array(Uint8Array.from(inits.get('model.embed_tokens.weight')!.rawData).buffer);
        const head = new Float32Array(Uint8Array.from(inits.get('lm_head.weight')!.rawData).buffer);
        for (const [v, h] of [[0, 0], [3, 17], [999, 47], [500, 1]] as const) expect(head[h * 1000 + v]).toBe(embed[v * 48 + h]);
      }

      const ref = await referenceModel(dir);
      const out = await forward(ref, { ids: [[1, 2, 3]], mask: [[1, 1, 1]], positions: [[0, 1, 2]] });
      expect(out.logits!.dims).toEqual([1, 3, 1000]);
      expect(out['present.1.key']!.dims).toEqual([1, shape.numKvHeads, 3, shape.headDim]);
      const s = stats(asFloat32(out.logits!));
      expect(s.finite).toBe(true);
      expect(s.std).toBeGreaterThan(1);
    }, 30_000);
  }
});

describe('builder internals', () => {
  it('float16 conversion rounds to nearest even and handles the edges', () => {
    const src = Float32Array.from([1, -2, 65504, 65520, 1e-8, 2 ** -24, 2 ** -14, 1 + 2 ** -11, 1 + 3 * 2 ** -11, NaN, -Infinity]);
    expect([...float32ToFloat16(src)]).toEqual([0x3c00, 0xc000, 0x7bff, 0x7c00, 0, 1, 0x0400, 0x3c00, 0x3c02, 0x7e00, 0xfc00]);
    const back = float16ToFloat32(float32ToFloat16(Float32Array.from([0.1, -3.5, 1000])));
    expect(back[0]).toBeCloseTo(0.1, 3);
    expect([back[1], back[2]]).toEqual([-3.5, 1000]);
  });

  it('the RNG is seeded per stream and gives mean 0, the requested std', () => {
    const a = new Float32Array(100_000);
    const b = new Float32Array(100_000);
    new Rng(1, 'w').fillNormal(a, 0.02);
    new Rng(1, 'w').fillNormal(b, 0.02);
    expect(a).toEqual(b);
    new Rng(1, 'other').fillNormal(b, 0.02);
    expect(a).not.toEqual(b);
    const s = stats(a);
    expect(Math.abs(s.std - 0.02)).toBeLessThan(0.0005);
    expect(s.max).toBeLessThan(0.02 * 3.47);
  });
});
