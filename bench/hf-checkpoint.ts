/**
 * Writes a Hugging Face checkpoint folder with random weights in a builder preset's shapes (Qwen3
 * layout: config.json, model.safetensors in bf16, the Qwen3 tokenizer files), to measure
 * `decide import-model` on a real-sized model without downloading one (docs/models.md, "Memory and
 * time"). The weights are streamed to disk: this script holds one 4 MiB chunk at a time.
 *
 *   npx tsx bench/hf-checkpoint.ts --preset qwen3-0.6b --out /tmp/hf-qwen3-0.6b-bf16
 */
import { mkdir, open, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { PRESETS, type ModelShape } from '../src/models/builder/presets.js';
import { Rng } from '../src/models/builder/rng.js';
import { writeTokenizerFiles } from '../src/models/builder/tokenizer-files.js';

interface TensorPlan {
  name: string;
  shape: number[];
  std: number;
  /** Added to every value (1 for RMSNorm weights). */
  base: number;
}

/** Tensor names and torch shapes of a Qwen3 checkpoint (tied embeddings: no lm_head.weight). */
function qwen3Tensors(s: ModelShape): TensorPlan[] {
  const q = s.numHeads * s.headDim;
  const kv = s.numKvHeads * s.headDim;
  const out: TensorPlan[] = [{ name: 'model.embed_tokens.weight', shape: [s.vocabSize, s.hiddenSize], std: 0.02, base: 0 }];
  for (let l = 0; l < s.numLayers; l++) {
    const p = `model.layers.${l}`;
    out.push(
      { name: `${p}.input_layernorm.weight`, shape: [s.hiddenSize], std: 0.05, base: 1 },
      { name: `${p}.self_attn.q_proj.weight`, shape: [q, s.hiddenSize], std: 0.02, base: 0 },
      { name: `${p}.self_attn.k_proj.weight`, shape: [kv, s.hiddenSize], std: 0.02, base: 0 },
      { name: `${p}.self_attn.v_proj.weight`, shape: [kv, s.hiddenSize], std: 0.02, base: 0 },
      { name: `${p}.self_attn.o_proj.weight`, shape: [s.hiddenSize, q], std: 0.02, base: 0 },
      { name: `${p}.self_attn.q_norm.weight`, shape: [s.headDim], std: 0.05, base: 1 },
      { name: `${p}.self_attn.k_norm.weight`, shape: [s.headDim], std: 0.05, base: 1 },
      { name: `${p}.post_attention_layernorm.weight`, shape: [s.hiddenSize], std: 0.05, base: 1 },
      { name: `${p}.mlp.gate_proj.weight`, shape: [s.intermediateSize, s.hiddenSize], std: 0.02, base: 0 },
      { name: `${p}.mlp.up_proj.weight`, shape: [s.intermediateSize, s.hiddenSize], std: 0.02, base: 0 },
      { name: `${p}.mlp.down_proj.weight`, shape: [s.hiddenSize, s.intermediateSize], std: 0.02, base: 0 },
    );
  }
  out.push({ name: 'model.norm.weight', shape: [s.hiddenSize], std: 0.05, base: 1 });
  return out;
}

const CHUNK = 1 << 21; // elements per write (4 MiB of bf16)

async function writeBf16Safetensors(file: string, tensors: TensorPlan[], seed: number): Promise<number> {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const t of tensors) {
    const bytes = t.shape.reduce((a, b) => a * b, 1) * 2;
    header[t.name] = { dtype: 'BF16', shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  while ((8 + Buffer.byteLength(json)) % 8 !== 0) json += ' ';
  const fh = await open(file, 'w');
  try {
    const prefix = Buffer.alloc(8);
    prefix.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
    await fh.write(prefix);
    await fh.write(Buffer.from(json, 'utf8'));
    const values = new Float32Array(CHUNK);
    const bits = new Uint32Array(values.buffer);
    const bf16 = new Uint16Array(CHUNK);
    for (const t of tensors) {
      const rng = new Rng(seed, t.name);
      const n = t.shape.reduce((a, b) => a * b, 1);
      for (let at = 0; at < n; at += CHUNK) {
        const k = Math.min(CHUNK, n - at);
        const v = values.subarray(0, k);
        rng.fillNormal(v, t.std);
        for (let i = 0; i < k; i++) {
          v[i] = v[i]! + t.base;
          bf16[i] = bits[i]! >>> 16; // truncation: the values are random anyway
        }
        await fh.write(new Uint8Array(bf16.buffer, 0, k * 2));
      }
    }
  } finally {
    await fh.close();
  }
  return offset;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { preset: { type: 'string', default: 'qwen3-0.6b' }, out: { type: 'string' }, seed: { type: 'string', default: '1' } },
  });
  const shape = PRESETS[values.preset!];
  if (!shape || !values.out) throw new Error(`usage: hf-checkpoint.ts --preset ${Object.keys(PRESETS).join('|')} --out DIR [--seed N]`);
  const out = path.resolve(values.out);
  await mkdir(out, { recursive: true });
  await writeFile(
    path.join(out, 'config.json'),
    `${JSON.stringify(
      {
        architectures: ['Qwen3ForCausalLM'],
        model_type: 'qwen3',
        hidden_size: shape.hiddenSize,
        num_attention_heads: shape.numHeads,
        num_key_value_heads: shape.numKvHeads,
        head_dim: shape.headDim,
        intermediate_size: shape.intermediateSize,
        num_hidden_layers: shape.numLayers,
        vocab_size: shape.vocabSize,
        max_position_embeddings: shape.maxPositionEmbeddings,
        rope_theta: shape.ropeTheta,
        rms_norm_eps: shape.rmsNormEps,
        hidden_act: 'silu',
        tie_word_embeddings: true,
        use_sliding_window: false,
        sliding_window: null,
        torch_dtype: 'bfloat16',
      },
      null,
      2,
    )}\n`,
  );
  if (shape.vocabSize >= 151669) {
    await writeTokenizerFiles(out, shape.vocabSize);
  }
  const tensors = qwen3Tensors(shape);
  const bytes = await writeBf16Safetensors(path.join(out, 'model.safetensors'), tensors, Number(values.seed));
  const params = tensors.reduce((n, t) => n + t.shape.reduce((a, b) => a * b, 1), 0);
  process.stdout.write(`wrote ${out}: ${(params / 1e6).toFixed(1)}M parameters, ${(bytes / 1e9).toFixed(2)} GB of bf16 weights\n`);
}

await main();
