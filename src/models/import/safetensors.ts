/**
 * Reads Hugging Face safetensors checkpoints without loading them whole: a file is an 8-byte
 * little-endian header length, a JSON header ({name: {dtype, shape, data_offsets}}, offsets
 * relative to the end of the header) and the raw little-endian tensors. Only headers are parsed up
 * front; tensor bytes are read one tensor at a time when the writer asks for them. A sharded
 * checkpoint lists its files in model.safetensors.index.json (`weight_map`: tensor -> file).
 */
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { statIfExists } from '../../support/stat-if-exists.js';

import { isPlainObject } from '../../api/json-value.js';

/** Storage types this importer converts (floating point only: quantized checkpoints are not supported). */
export type SafetensorsDtype = 'F64' | 'F32' | 'F16' | 'BF16';
const ELEMENT_BYTES: Record<SafetensorsDtype, number> = { F64: 8, F32: 4, F16: 2, BF16: 2 };

export interface TensorEntry {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  file: string;
  /** Absolute byte offsets in `file`. */
  begin: number;
  end: number;
}

export class CheckpointError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CheckpointError';
  }
}

const INDEX_FILE = 'model.safetensors.index.json';
const SINGLE_FILE = 'model.safetensors';
const MAX_HEADER_BYTES = 100 * 1024 * 1024;

/** The tensors of a checkpoint directory, by name. */
export class SafetensorsCheckpoint {
  private constructor(
    readonly tensors: ReadonlyMap<string, TensorEntry>,
    readonly files: readonly string[],
    /** Set when model.safetensors was read and other weights beside it were not (an index naming other shards, an adapter, a copy): a warning for the user. */
    readonly ignored?: string,
  ) {}

  /**
   * Reads every header of the checkpoint in `dir`: model.safetensors when present (transformers'
   * from_pretrained looks for it before the index or any other file, so a folder holding more loads
   * it there; an index naming other shards, an adapter or a copy beside it are then not read, and
   * `ignored` says so), else the files named by model.safetensors.index.json when present, else
   * every *.safetensors file in the directory.
   */
  static open(dir: string): SafetensorsCheckpoint {
    const indexPath = path.join(dir, INDEX_FILE);
    let files: string[];
    let weightMap: Record<string, string> | undefined;
    let ignored: string | undefined;
    if (existsSync(path.join(dir, SINGLE_FILE))) {
      files = [SINGLE_FILE];
      const others = readdirSync(dir).filter((f) => f.endsWith('.safetensors') && f !== SINGLE_FILE).sort();
      if (existsSync(indexPath) && !indexNamesOnly(indexPath, SINGLE_FILE)) {
        ignored =
          `${SINGLE_FILE} and ${INDEX_FILE} are both there: ${SINGLE_FILE} is imported and the index (with the shards it lists) is ignored, ` +
          `as transformers' from_pretrained loads ${SINGLE_FILE} first; remove the set you do not mean`;
      } else if (others.length > 0) {
        ignored =
          `${others.join(', ')} ${others.length === 1 ? 'is' : 'are'} not read: ${SINGLE_FILE} is imported on its own, as transformers' ` +
          'from_pretrained loads it (an adapter or a copy of the weights beside it is not merged in)';
      }
    } else if (existsSync(indexPath)) {
      assertRegularFile(indexPath);
      let index: unknown;
      try {
        index = JSON.parse(readFileSync(indexPath, 'utf8'));
      } catch (err) {
        throw new CheckpointError(`${INDEX_FILE}: not valid JSON (${(err as Error).message})`);
      }
      const map = isPlainObject(index) ? index.weight_map : undefined;
      if (!isPlainObject(map)) throw new CheckpointError(`${INDEX_FILE}: has no "weight_map" object`);
      for (const [tensor, f] of Object.entries(map)) {
        if (typeof f !== 'string' || f === '' || f.includes('/') || f.includes('\\') || f === '.' || f === '..') {
          throw new CheckpointError(`${INDEX_FILE}: bad shard name ${JSON.stringify(f)?.slice(0, 100)} for ${tensor.slice(0, 100)}`);
        }
      }
      weightMap = map as Record<string, string>;
      files = [...new Set(Object.values(weightMap))].sort();
      for (const f of files) {
        if (!existsSync(path.join(dir, f))) throw new CheckpointError(`${INDEX_FILE} names the shard ${f}, which is missing`);
      }
    } else {
      files = readdirSync(dir).filter((f) => f.endsWith('.safetensors')).sort();
      if (files.length === 0) {
        const hasBin = readdirSync(dir).some((f) => f.endsWith('.bin') || f.endsWith('.pt') || f.endsWith('.pth'));
        throw new CheckpointError(
          `no *.safetensors weights in ${dir}` +
            (hasBin ? ' (PyTorch .bin/.pt weights are not read: convert them to safetensors first)' : ''),
        );
      }
    }
    const tensors = new Map<string, TensorEntry>();
    for (const f of files) {
      for (const entry of readHeader(path.join(dir, f))) {
        if (tensors.has(entry.name)) throw new CheckpointError(`tensor ${entry.name} is stored twice (${path.basename(tensors.get(entry.name)!.file)} and ${f})`);
        if (weightMap !== undefined && weightMap[entry.name] !== undefined && weightMap[entry.name] !== f) {
          throw new CheckpointError(`${INDEX_FILE} puts ${entry.name} in ${weightMap[entry.name]}, but it is in ${f}`);
        }
        tensors.set(entry.name, entry);
      }
    }
    if (weightMap !== undefined) {
      for (const name of Object.keys(weightMap)) {
        if (!tensors.has(name)) throw new CheckpointError(`${INDEX_FILE} lists ${name} in ${weightMap[name]}, but that shard does not hold it`);
      }
    }
    return new SafetensorsCheckpoint(tensors, files, ignored);
  }

  /** Total bytes of tensor data. */
  get dataBytes(): number {
    let n = 0;
    for (const t of this.tensors.values()) n += t.end - t.begin;
    return n;
  }
}

/** Parses one file's header and checks every tensor lies inside the file with the size its shape says. */
export function readHeader(file: string): TensorEntry[] {
  assertRegularFile(file);
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    const name = path.basename(file);
    if (size < 8) throw new CheckpointError(`${name}: too short to be a safetensors file`);
    const lenBuf = Buffer.alloc(8);
    readExactly(fd, lenBuf, 0);
    const headerLen = Number(lenBuf.readBigUInt64LE(0));
    if (headerLen <= 0 || headerLen > MAX_HEADER_BYTES || 8 + headerLen > size) {
      throw new CheckpointError(`${name}: bad safetensors header length ${headerLen}`);
    }
    const headerBuf = Buffer.alloc(headerLen);
    readExactly(fd, headerBuf, 8);
    let header: unknown;
    try {
      header = JSON.parse(headerBuf.toString('utf8'));
    } catch (err) {
      throw new CheckpointError(`${name}: the safetensors header is not valid JSON (${(err as Error).message})`);
    }
    if (!isPlainObject(header)) throw new CheckpointError(`${name}: the safetensors header must be a JSON object`);
    const dataStart = 8 + headerLen;
    const out: TensorEntry[] = [];
    for (const [tensorName, info] of Object.entries(header)) {
      if (tensorName === '__metadata__') continue;
      if (!isPlainObject(info)) throw new CheckpointError(`${name}: tensor ${tensorName.slice(0, 100)} is not described by an object`);
      const t = info as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
      if (typeof t.dtype !== 'string' || !(t.dtype in ELEMENT_BYTES)) {
        throw new CheckpointError(
          `${name}: tensor ${tensorName} has dtype ${String(t.dtype)}; only F32, F16, BF16 and F64 weights can be imported (quantized checkpoints are not supported)`,
        );
      }
      const shape = t.shape;
      const offsets = t.data_offsets;
      if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) throw new CheckpointError(`${name}: tensor ${tensorName} has a bad shape`);
      if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isInteger(o) && o >= 0)) {
        throw new CheckpointError(`${name}: tensor ${tensorName} has bad data_offsets`);
      }
      const dtype = t.dtype as SafetensorsDtype;
      const [first, last] = offsets as [number, number];
      const begin = dataStart + first;
      const end = dataStart + last;
      const want = (shape as number[]).reduce((a, b) => a * b, 1) * ELEMENT_BYTES[dtype];
      const described = `tensor ${tensorName} (${dtype} ${JSON.stringify(shape)})`;
      // Three different faults, each told as what it is: the header contradicting itself (offsets
      // backwards, or a span of another size than the shape needs) is not a short file.
      if (last < first) throw new CheckpointError(`${name}: ${described} has data_offsets [${first}, ${last}] that run backwards (the end before the start); a corrupt header`);
      if (end - begin !== want) {
        throw new CheckpointError(`${name}: ${described} needs ${want} bytes for its shape, but its data_offsets [${first}, ${last}] span ${last - first}; a corrupt header`);
      }
      if (end > size) throw new CheckpointError(`${name}: ${described} needs ${want} bytes at [${begin}, ${end}) but the file is ${size} bytes (truncated)`);
      out.push({ name: tensorName, dtype, shape: shape as number[], file, begin, end });
    }
    checkLayout(name, out, dataStart, size);
    return out;
  } finally {
    closeSync(fd);
  }
}

/** Whether the index at `indexPath` maps every tensor to `file` (an index of one shard, the same weights). */
function indexNamesOnly(indexPath: string, file: string): boolean {
  // Only a regular file of a sane size is read (a FIFO would block for ever).
  const info = statIfExists(indexPath);
  if (!info?.isFile() || info.size > MAX_HEADER_BYTES) return false;
  try {
    const index = JSON.parse(readFileSync(indexPath, 'utf8')) as unknown;
    const map = isPlainObject(index) ? index.weight_map : undefined;
    return isPlainObject(map) && Object.values(map).every((f) => f === file);
  } catch {
    return false;
  }
}

/**
 * The format's own rule (the safetensors library refuses such a file too): the tensors' byte
 * ranges cover the data section exactly, one after another, with no overlap, gap or trailing
 * bytes. Two tensors sharing bytes, or bytes no tensor owns, mean a damaged or forged file whose
 * weights would be read wrong without any other sign.
 */
function checkLayout(name: string, tensors: readonly TensorEntry[], dataStart: number, size: number): void {
  let at = dataStart;
  for (const t of [...tensors].sort((a, b) => a.begin - b.begin || a.end - b.end)) {
    if (t.begin < at) throw new CheckpointError(`${name}: tensor ${t.name} overlaps the tensor before it (bytes [${t.begin}, ${t.end})); a corrupt file`);
    if (t.begin > at) throw new CheckpointError(`${name}: bytes [${at}, ${t.begin}) belong to no tensor; a corrupt file`);
    at = t.end;
  }
  if (at !== size) throw new CheckpointError(`${name}: ${size - at} bytes after the last tensor belong to no tensor; a corrupt or truncated-then-appended file`);
}

/** Only regular files are read: opening a FIFO would block for ever, a device has no end. */
function assertRegularFile(file: string): void {
  const info = statIfExists(file);
  if (info === undefined) throw new CheckpointError(`${path.basename(file)}: missing (or a broken link)`);
  if (info.isDirectory()) throw new CheckpointError(`${path.basename(file)}: a directory, not a file`);
  if (!info.isFile()) throw new CheckpointError(`${path.basename(file)}: not a regular file (a FIFO, socket or device cannot be imported)`);
}

function readExactly(fd: number, buf: Uint8Array, position: number): void {
  let done = 0;
  while (done < buf.length) {
    const n = readSync(fd, buf, done, buf.length - done, position + done);
    if (n === 0) throw new CheckpointError('unexpected end of file');
    done += n;
  }
}

/** Elements per read when streaming a tensor. */
const STREAM_ELEMENTS = 1 << 20;

/** Decodes `count` elements of `dtype` from `raw` (byte-aligned copy) into `out` as float32. */
function decode(dtype: SafetensorsDtype, raw: Uint8Array, out: Float32Array): void {
  const n = out.length;
  if (dtype === 'F32') {
    out.set(new Float32Array(raw.buffer, raw.byteOffset, n));
  } else if (dtype === 'BF16') {
    // bfloat16 is the top half of a float32: exact.
    const src = new Uint16Array(raw.buffer, raw.byteOffset, n);
    const dst = new Uint32Array(out.buffer, out.byteOffset, n);
    for (let i = 0; i < n; i++) dst[i] = src[i]! << 16;
  } else if (dtype === 'F16') {
    const src = new Uint16Array(raw.buffer, raw.byteOffset, n);
    for (let i = 0; i < n; i++) out[i] = halfToFloat(src[i]!);
  } else {
    const src = new Float64Array(raw.buffer, raw.byteOffset, n);
    for (let i = 0; i < n; i++) out[i] = src[i]!;
  }
}

function halfToFloat(h: number): number {
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  const sign = h & 0x8000 ? -1 : 1;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 0x1f) return m !== 0 ? NaN : sign * Infinity;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

/** The tensor as float32 chunks in storage order, STREAM_ELEMENTS at a time (the chunk buffer is reused). */
export function* streamTensor(entry: TensorEntry): Generator<Float32Array> {
  const bytesPer = ELEMENT_BYTES[entry.dtype];
  const total = (entry.end - entry.begin) / bytesPer;
  const raw = new Uint8Array(Math.min(total, STREAM_ELEMENTS) * bytesPer);
  const out = new Float32Array(Math.min(total, STREAM_ELEMENTS));
  const fd = openSync(entry.file, 'r');
  try {
    for (let at = 0; at < total; at += STREAM_ELEMENTS) {
      const n = Math.min(STREAM_ELEMENTS, total - at);
      const bytes = raw.subarray(0, n * bytesPer);
      readExactly(fd, bytes, entry.begin + at * bytesPer);
      const chunk = out.subarray(0, n);
      decode(entry.dtype, bytes, chunk);
      yield chunk;
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * The transpose of a 2-D tensor [rows, cols] as float32 chunks of whole output rows (output is
 * [cols, rows]). The tensor's raw bytes are held once, in their stored type (a bf16 matrix costs
 * 2 bytes per element here, not 4); output rows are decoded a block at a time.
 */
export function* streamTransposed(entry: TensorEntry): Generator<Float32Array> {
  if (entry.shape.length !== 2) throw new CheckpointError(`tensor ${entry.name}: cannot transpose a ${entry.shape.length}-D tensor`);
  const [rows, cols] = entry.shape as [number, number];
  const raw = new Uint8Array(entry.end - entry.begin);
  const fd = openSync(entry.file, 'r');
  try {
    readExactly(fd, raw, entry.begin);
  } finally {
    closeSync(fd);
  }
  const perChunk = Math.max(1, Math.floor((4 * STREAM_ELEMENTS) / rows));
  const out = new Float32Array(Math.min(cols, perChunk) * rows);
  if (entry.dtype === 'BF16' || entry.dtype === 'F16') {
    const src = new Uint16Array(raw.buffer, 0, rows * cols);
    const bf16 = entry.dtype === 'BF16';
    const bits = new Uint32Array(out.buffer);
    for (let c0 = 0; c0 < cols; c0 += perChunk) {
      const c1 = Math.min(cols, c0 + perChunk);
      // Row-major over the source so each source cache line is read once per block.
      const width = c1 - c0;
      for (let r = 0; r < rows; r++) {
        const from = r * cols + c0;
        if (bf16) for (let c = 0; c < width; c++) bits[c * rows + r] = src[from + c]! << 16;
        else for (let c = 0; c < width; c++) out[c * rows + r] = halfToFloat(src[from + c]!);
      }
      yield out.subarray(0, (c1 - c0) * rows);
    }
  } else {
    const src = entry.dtype === 'F32' ? new Float32Array(raw.buffer, 0, rows * cols) : new Float64Array(raw.buffer, 0, rows * cols);
    for (let c0 = 0; c0 < cols; c0 += perChunk) {
      const c1 = Math.min(cols, c0 + perChunk);
      const width = c1 - c0;
      for (let r = 0; r < rows; r++) {
        const from = r * cols + c0;
        for (let c = 0; c < width; c++) out[c * rows + r] = src[from + c]!;
      }
      yield out.subarray(0, (c1 - c0) * rows);
    }
  }
}
