/**
 * Test-side safetensors: a whole-file reader and a writer (F32 / BF16), written independently of
 * src/models/import so the importer is checked against the format, not against itself.
 */
import { readFileSync, writeFileSync } from 'node:fs';

export interface Tensor {
  shape: number[];
  data: Float64Array;
}

/** One float32 seen as its bits; reused by every conversion (millions per checkpoint) instead of new arrays or buffers each. */
const f32 = new Float32Array(1);
const f32Bits = new Uint32Array(f32.buffer);

export function readSafetensors(file: string): Map<string, Tensor> {
  const buf = readFileSync(file);
  const headerLen = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + headerLen).toString('utf8')) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const base = 8 + headerLen;
  const out = new Map<string, Tensor>();
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [b, e] = t.data_offsets;
    const bytes = buf.subarray(base + b, base + e);
    const n = t.shape.reduce((x, y) => x * y, 1);
    const data = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      if (t.dtype === 'F32') data[i] = bytes.readFloatLE(i * 4);
      else if (t.dtype === 'BF16') {
        f32Bits[0] = bytes.readUInt16LE(i * 2) << 16;
        data[i] = f32[0]!;
      } else throw new Error(`test reader: dtype ${t.dtype}`);
    }
    out.set(name, { shape: t.shape, data });
  }
  return out;
}

/** Rounds to bfloat16 (round to nearest even), as torch's .to(torch.bfloat16) does. */
export function toBf16Bits(v: number): number {
  f32[0] = v;
  const u = f32Bits[0]!;
  const rounded = u + 0x7fff + ((u >>> 16) & 1);
  return (rounded >>> 16) & 0xffff;
}

export function bf16Round(v: number): number {
  f32Bits[0] = toBf16Bits(v) << 16;
  return f32[0]!;
}

/** Writes a safetensors file; tensors in the given order, data as F32 or BF16. */
export function writeSafetensors(file: string, tensors: Map<string, Tensor>, dtype: 'F32' | 'BF16' = 'F32', metadata?: Record<string, string>): void {
  const header: Record<string, unknown> = {};
  if (metadata) header.__metadata__ = metadata;
  const bytesPer = dtype === 'F32' ? 4 : 2;
  let offset = 0;
  for (const [name, t] of tensors) {
    const len = t.data.length * bytesPer;
    header[name] = { dtype, shape: t.shape, data_offsets: [offset, offset + len] };
    offset += len;
  }
  let json = JSON.stringify(header);
  while ((8 + Buffer.byteLength(json)) % 8 !== 0) json += ' ';
  const headerBytes = Buffer.from(json, 'utf8');
  const out = Buffer.alloc(8 + headerBytes.length + offset);
  out.writeBigUInt64LE(BigInt(headerBytes.length), 0);
  headerBytes.copy(out, 8);
  let at = 8 + headerBytes.length;
  for (const t of tensors.values()) {
    for (let i = 0; i < t.data.length; i++) {
      if (dtype === 'F32') out.writeFloatLE(t.data[i]!, at + i * 4);
      else out.writeUInt16LE(toBf16Bits(t.data[i]!), at + i * 2);
    }
    at += t.data.length * bytesPer;
  }
  writeFileSync(file, out);
}

/**
 * Writes `tensors` as `shards` files named as save_pretrained names them
 * (model-00001-of-00003.safetensors, …) plus the model.safetensors.index.json that maps each tensor
 * to its shard. Tensors are dealt round-robin, so every shard holds some of every kind.
 */
export function writeShardedSafetensors(dir: string, tensors: Map<string, Tensor>, dtype: 'F32' | 'BF16', shards: number): void {
  const entries = [...tensors];
  const weightMap: Record<string, string> = {};
  const pad = (n: number) => String(n).padStart(5, '0');
  for (let s = 0; s < shards; s++) {
    const file = `model-${pad(s + 1)}-of-${pad(shards)}.safetensors`;
    const part = new Map(entries.filter((_, i) => i % shards === s));
    for (const name of part.keys()) weightMap[name] = file;
    writeSafetensors(`${dir}/${file}`, part, dtype);
  }
  writeFileSync(`${dir}/model.safetensors.index.json`, JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }));
}
