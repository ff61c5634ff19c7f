/**
 * Multi-item packed rows fed straight to a graph with the segment-ids input (through the
 * onnxruntime-node JS API, never the engine): a state and its questions in one row, or the
 * questions after the state's KV as past. Tests compare each question's logits here with its
 * fresh full-sequence row (reference.ts).
 */
import * as ort from 'onnxruntime-node';

import { SEGMENT_IDS_INPUT } from '../../src/models/builder/decoder-graph.js';
import { asFloat32, emptyPast, type ReferenceModel } from './reference.js';
import { tokenIds } from './score-compare.js';

/** A state and its questions (token ids). */
export interface Item {
  state: number[];
  questions: number[][];
}

const int64 = (values: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(values.map(BigInt)), dims);
export const filled = (n: number, v: number): number[] => Array<number>(n).fill(v);
const upTo = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

/** Rows right-padded with `fill` to `width`, as one [rows, width] int64 tensor. */
function padded(rows: number[][], width: number, fill = 0): ort.Tensor {
  return int64(rows.flatMap((r) => [...r, ...filled(width - r.length, fill)]), [rows.length, width]);
}

/**
 * Two items with token ids below `below`: a 40-token state with questions of 12, 7 and 15 tokens,
 * and a 29-token state with 9 and 13 (a padded past and padded rows beside the first). Questions
 * longer than a window of 8 test that a packed question is windowed from its own positions.
 */
export function sampleItems(below: number): [Item, Item] {
  const ids = (seed: number, n: number) => tokenIds(seed, n, below);
  return [
    { state: ids(1, 40), questions: [ids(2, 12), ids(3, 7), ids(4, 15)] },
    { state: ids(5, 29), questions: [ids(6, 9), ids(7, 13)] },
  ];
}

/** The questions of an item packed one after another: tokens, positions restarting at the state's length, 1-based segments. */
export function packedQuestions({ state, questions }: Item) {
  return {
    tokens: questions.flat(),
    positions: questions.flatMap((q) => upTo(q.length, state.length)),
    segments: questions.flatMap((q, k) => filled(q.length, k + 1)),
    /** Index of each question's last token among the question tokens. */
    last: questions.map((_, k) => questions.slice(0, k + 1).reduce((n, q) => n + q.length, 0) - 1),
  };
}

/**
 * One row, empty past: the state (segment 0), then every question (segments `questionSegments`,
 * default their own). Returns the logits, [1, state + question tokens, vocab].
 */
export async function packedRow(model: ReferenceModel, item: Item, questionSegments?: number[]): Promise<ort.Tensor> {
  const q = packedQuestions(item);
  const tokens = [...item.state, ...q.tokens];
  const out = await model.session.run(
    {
      input_ids: int64(tokens, [1, tokens.length]),
      attention_mask: int64(filled(tokens.length, 1), [1, tokens.length]),
      position_ids: int64([...upTo(item.state.length), ...q.positions], [1, tokens.length]),
      [SEGMENT_IDS_INPUT]: int64([...filled(item.state.length, 0), ...(questionSegments ?? q.segments)], [1, tokens.length]),
      ...emptyPast(model, 1),
    },
    ['logits'],
  );
  return out.logits!;
}

/**
 * The engine's fork-free layout, one row per item: a prefix pass over the states (right-padded to
 * the longest, masked), then each item's questions packed in one row after its state's KV as past
 * (the past's padding between the state's end and the longest state masked, the rows right-padded).
 * Returns the question pass's logits, [items, longest question tokens, vocab].
 */
export async function questionsAfterPast(model: ReferenceModel, items: Item[]): Promise<ort.Tensor> {
  const pastLen = Math.max(...items.map((it) => it.state.length));
  const prefix = await model.session.run({
    input_ids: padded(items.map((it) => it.state), pastLen),
    attention_mask: padded(items.map((it) => filled(it.state.length, 1)), pastLen),
    position_ids: padded(items.map((it) => upTo(it.state.length)), pastLen),
    [SEGMENT_IDS_INPUT]: padded(items.map(() => []), pastLen), // all segment 0: the states are shared
    ...emptyPast(model, items.length),
  });
  const past: Record<string, ort.Tensor> = {};
  for (let l = 0; l < model.numLayers; l++) {
    for (const kind of ['key', 'value']) past[`past_key_values.${l}.${kind}`] = prefix[`present.${l}.${kind}`]!;
  }
  const qs = items.map(packedQuestions);
  const width = Math.max(...qs.map((q) => q.tokens.length));
  const out = await model.session.run(
    {
      input_ids: padded(qs.map((q) => q.tokens), width),
      attention_mask: padded(
        items.map((it, b) => [...filled(it.state.length, 1), ...filled(pastLen - it.state.length, 0), ...filled(qs[b]!.tokens.length, 1)]),
        pastLen + width,
      ),
      position_ids: padded(qs.map((q) => q.positions), width),
      [SEGMENT_IDS_INPUT]: padded(qs.map((q) => [...filled(pastLen, 0), ...q.segments]), pastLen + width),
      ...past,
    },
    ['logits'],
  );
  return out.logits!;
}

/** Logits of row `b` at `position`, from a [B, S, vocab] output. */
export function logitsAt(out: ort.Tensor, position: number, b = 0): Float32Array {
  const [, seq, vocab] = out.dims as [number, number, number];
  const at = (b * seq + position) * vocab;
  return asFloat32(out).slice(at, at + vocab);
}

/**
 * The largest difference, over every question of every item, between its logits in `out` and its
 * fresh full-sequence row's (`fresh(state + question)`). `offset(item)` is where the item's
 * questions start in its row of `out`: the state's length in a one-row pass, 0 after a past.
 */
export async function worstQuestion(
  out: ort.Tensor,
  items: Item[],
  offset: (item: Item) => number,
  fresh: (ids: number[]) => Promise<Float32Array>,
): Promise<number> {
  let worst = 0;
  for (const [b, item] of items.entries()) {
    const { last } = packedQuestions(item);
    for (const [k, q] of item.questions.entries()) {
      const got = logitsAt(out, offset(item) + last[k]!, b);
      const want = await fresh([...item.state, ...q]);
      for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i]! - want[i]!));
    }
  }
  return worst;
}
