/**
 * The shared tiny test model (preset 'tiny', seed 1) in test/.tmp/models/tiny, built on first use;
 * `tinyModelDir({ segmentIds: true })` is the same weights in the packing graph (tiny-packed), and
 * `{ attention: 'fused' }` with fused attention (tiny-…-fused).
 * The directory carries a hash of the builder (sources and generated graph), so a change to the
 * builder rebuilds it.
 * Concurrent vitest workers may both build; each builds privately and renames into place, and the
 * loser discards its copy.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDecoderGraph, type DecoderFeatures } from '../../src/models/builder/decoder-graph.js';
import { makeModel } from '../../src/models/builder/make-model.js';
import { onnx } from '../../src/models/builder/onnx-writer.js';
import { PRESETS } from '../../src/models/builder/presets.js';
import { Rng } from '../../src/models/builder/rng.js';
import { DEFAULT_INT8_SCHEME } from '../../src/models/builder/quantize.js';

export const TINY_SEED = 1;
const MODELS_DIR = fileURLToPath(new URL('../.tmp/models/', import.meta.url));
const BUILDER_DIR = fileURLToPath(new URL('../../src/models/builder/', import.meta.url));
const STAMP_FILE = '.builder-hash';

/** Graph variants the tests use; each has its own directory. */
export type TinyVariant = Pick<DecoderFeatures, 'segmentIds' | 'attention' | 'causalStates'>;

/** `dtype` 'int8' is the same weights stored as int8 (make-model --dtype int8, tiny-…-int8). */
export async function tinyModelDir(requested: TinyVariant = {}, dtype: 'fp32' | 'int8' = 'fp32'): Promise<string> {
  // Only the features that are on: { segmentIds: undefined } is the stock model, stamped as such.
  const variant: TinyVariant = {
    ...(requested.segmentIds ? { segmentIds: true } : {}),
    ...(requested.attention === 'fused' ? { attention: 'fused' as const } : {}),
    ...(requested.causalStates ? { causalStates: true } : {}),
  };
  const name = ['tiny', variant.segmentIds ? 'packed' : '', variant.attention === 'fused' ? 'fused' : '', variant.causalStates ? 'causal' : '', dtype === 'int8' ? 'int8' : '']
    .filter(Boolean)
    .join('-');
  const dir = path.join(MODELS_DIR, name);
  const want = await builderHash(variant, dtype);
  if ((await readStamp(dir)) === want) return dir;

  const staging = path.join(MODELS_DIR, `${name}.build-${process.pid}-${randomBytes(4).toString('hex')}`);
  await makeModel({ preset: 'tiny', outDir: staging, seed: TINY_SEED, dtype, ...(Object.keys(variant).length > 0 ? { features: variant } : {}) });
  await writeFile(path.join(staging, STAMP_FILE), want);
  try {
    await rename(staging, dir);
    return dir;
  } catch {
    // Another worker won, or a stale model is in the way.
  }
  if ((await readStamp(dir)) === want) {
    await rm(staging, { recursive: true, force: true });
    return dir;
  }
  const stale = `${dir}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  await rename(dir, stale).catch(() => undefined);
  await rename(staging, dir).catch(() => rm(staging, { recursive: true, force: true }));
  await rm(stale, { recursive: true, force: true });
  if ((await readStamp(dir)) !== want) throw new Error(`tinyModelDir: could not install ${dir}`);
  return dir;
}

async function readStamp(dir: string): Promise<string | undefined> {
  return readFile(path.join(dir, STAMP_FILE), 'utf8').catch(() => undefined);
}

/**
 * The builder sources on disk plus the graph and RNG as this process's loaded modules produce them, so
 * a process that loaded other code than the files now on disk never stamps its model as current.
 */
async function builderHash(variant: TinyVariant, dtype: 'fp32' | 'int8'): Promise<string> {
  const hash = createHash('sha256');
  for (const file of (await readdir(BUILDER_DIR)).sort()) {
    hash.update(file).update(await readFile(path.join(BUILDER_DIR, file)));
  }
  const { graph, weights } = buildDecoderGraph(PRESETS.tiny!, 'fp32', variant, dtype === 'int8' ? DEFAULT_INT8_SCHEME : undefined);
  hash.update(onnx.GraphProto.encode(graph).finish()).update(JSON.stringify(weights));
  const sample = new Float32Array(64);
  new Rng(TINY_SEED, 'stamp').fillNormal(sample, 1);
  hash.update(new Uint8Array(sample.buffer));
  return hash.digest('hex');
}
