/**
 * Graph inputs in the engine's batch layout (native/decoder.h), for tests that run two graphs of
 * the same weights side by side through onnxruntime-node: rows with different past lengths,
 * padding between a row's past and its new tokens, padded new tokens, and (with segments) new
 * tokens numbered in pairs after a shared state. Values are deterministic, so a failure reproduces.
 */
import * as ort from 'onnxruntime-node';
import { expect } from 'vitest';

import { float16Tensor } from '../../bench/ort-float16.js';
import { SEGMENT_IDS_INPUT } from '../../src/models/builder/decoder-graph.js';
import { float32ToFloat16 } from '../../src/models/builder/onnx-writer.js';
import { asFloat32 } from './reference.js';

export interface LayoutShape {
  numLayers: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
}

/** Deterministic values in [-1, 1). */
export function values(seed: number, n: number): Float32Array {
  let x = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 2 ** 31 - 1;
  });
}

const int64 = (v: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(v.map(BigInt)), dims);

/**
 * Row r has pastLens[r] real past tokens at [0, pastLens[r]) then padding to P, and newLens[r] real
 * new tokens at [P, P + newLens[r]) then padding to S. Positions continue the row's own count;
 * segments (when asked for) number each row's new tokens in pairs after a shared state.
 */
export function engineLayoutFeeds(shape: LayoutShape, pastLens: number[], newLens: number[], withSegments: boolean, fp16 = false): Record<string, ort.Tensor> {
  const { numLayers, numKvHeads, headDim, vocabSize } = shape;
  const B = pastLens.length;
  const P = Math.max(...pastLens);
  const S = Math.max(...newLens);
  const T = P + S;
  const ids: number[] = [];
  const mask: number[] = [];
  const positions: number[] = [];
  const segments: number[] = [];
  const tokens = values(5, B * S);
  for (let r = 0; r < B; r++) {
    for (let j = 0; j < T; j++) mask.push(j < pastLens[r]! || (j >= P && j < P + newLens[r]!) ? 1 : 0);
    for (let s = 0; s < S; s++) {
      ids.push(Math.floor((tokens[r * S + s]! + 1) * 0.5 * Math.max(1, vocabSize - 64)));
      positions.push(pastLens[r]! + s);
    }
    for (let j = 0; j < T; j++) segments.push(j < P ? 0 : 1 + Math.floor((j - P) / 2));
  }
  const feeds: Record<string, ort.Tensor> = {
    input_ids: int64(ids, [B, S]),
    attention_mask: int64(mask, [B, T]),
    position_ids: int64(positions, [B, S]),
  };
  if (withSegments) feeds[SEGMENT_IDS_INPUT] = int64(segments, [B, T]);
  const pastDims = [B, numKvHeads, P, headDim];
  const past = (seed: number) => {
    const v = values(seed, B * numKvHeads * P * headDim);
    return fp16 ? float16Tensor(float32ToFloat16(v), pastDims) : new ort.Tensor('float32', v, pastDims);
  };
  for (let l = 0; l < numLayers; l++) {
    feeds[`past_key_values.${l}.key`] = past(100 + l);
    feeds[`past_key_values.${l}.value`] = past(200 + l);
  }
  return feeds;
}

export function maxDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/**
 * Runs both sessions on the same feeds; returns the largest difference in logits and in presents
 * (after checking that every output has the same dims), at the real tokens only (attention_mask 1):
 * a padded token may see no key at all, and what a graph returns for a row with nothing to attend to
 * (and the KV the next layer makes of it) is not part of its contract; it must only be finite, which
 * is checked here. The engine never reads a padded token's logits nor lets a key of one be seen.
 */
export async function compareSessions(want: ort.InferenceSession, got: ort.InferenceSession, feeds: Record<string, ort.Tensor>): Promise<{ logits: number; presents: number }> {
  const [a, b] = [await want.run(feeds), await got.run(feeds)];
  expect(b.logits!.dims).toEqual(a.logits!.dims);
  const mask = feeds.attention_mask!.data as BigInt64Array;
  const total = feeds.attention_mask!.dims[1]!;
  let presents = 0;
  for (const name of want.outputNames.filter((n) => n.startsWith('present.'))) {
    expect(b[name]!.dims, name).toEqual(a[name]!.dims);
    const [wantKv, gotKv] = [asFloat32(a[name]!), asFloat32(b[name]!)];
    expect(gotKv.every(Number.isFinite), `${name} finite`).toBe(true);
    // [rows, heads, total, head_dim]: a padded slot's entries come from its undefined output one layer down.
    const [rows, heads, , headDim] = a[name]!.dims as [number, number, number, number];
    for (let r = 0; r < rows; r++) {
      for (let h = 0; h < heads; h++) {
        for (let j = 0; j < total; j++) {
          if (mask[r * total + j] === 0n) continue;
          const at = ((r * heads + h) * total + j) * headDim;
          presents = Math.max(presents, maxDiff(gotKv.subarray(at, at + headDim), wantKv.subarray(at, at + headDim)));
        }
      }
    }
  }
  const [wantLogits, gotLogits] = [asFloat32(a.logits!), asFloat32(b.logits!)];
  expect(gotLogits.every(Number.isFinite), 'every logit finite').toBe(true);
  const [rows, newTokens, vocab] = a.logits!.dims as [number, number, number];
  let logits = 0;
  for (let r = 0; r < rows; r++) {
    for (let s = 0; s < newTokens; s++) {
      if (mask[r * total + total - newTokens + s] === 0n) continue;
      const at = (r * newTokens + s) * vocab;
      logits = Math.max(logits, maxDiff(gotLogits.subarray(at, at + vocab), wantLogits.subarray(at, at + vocab)));
    }
  }
  return { logits, presents };
}
