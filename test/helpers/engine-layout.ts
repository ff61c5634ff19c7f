/**
 * Graph inputs in the engine's batch layout (native/decoder.h), for tests that run two graphs of
 * the same weights side by side through onnxruntime-node: rows with different past lengths,
 * padding between a row's past and its new tokens, padded new tokens, and (with segments) new
 * tokens numbered in pairs after a shared state. Values are deterministic, so a failure reproduces.
 */
import * as ort from 'onnxruntime-node';
import { expect } from 'vitest';

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
    return fp16 ? new ort.Tensor('float16', float32ToFloat16(v), pastDims) : new ort.Tensor('float32', v, pastDims);
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
 * (after checking that every output has the same dims).
 */
export async function compareSessions(want: ort.InferenceSession, got: ort.InferenceSession, feeds: Record<string, ort.Tensor>): Promise<{ logits: number; presents: number }> {
  const [a, b] = [await want.run(feeds), await got.run(feeds)];
  expect(b.logits!.dims).toEqual(a.logits!.dims);
  let presents = 0;
  for (const name of want.outputNames.filter((n) => n.startsWith('present.'))) {
    expect(b[name]!.dims, name).toEqual(a[name]!.dims);
    presents = Math.max(presents, maxDiff(asFloat32(b[name]!), asFloat32(a[name]!)));
  }
  return { logits: maxDiff(asFloat32(b.logits!), asFloat32(a.logits!)), presents };
}
