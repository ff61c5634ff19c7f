/**
 * The fresh-scoring baseline: what a Node developer would write without this engine. Each
 * (state, question) is one full sequence (prefix ++ suffix ids) run through the onnxruntime-node JS
 * API with an empty past; rows are sorted by length, right-padded (attention_mask 0) and batched,
 * and the label logits are read at each row's last real position.
 *
 * It runs on the SAME graph file as the engine: the LM-head-gathered rewrite, whose extra int64
 * input `decide_token_index` [batch, 1] names each row's last real token (flat over the pass), so the
 * LM head runs on one position per row in both systems and the measured speedup is prefix reuse and
 * batching alone.
 * Where that graph uses the engine's own operators (an int8 model's u8 x s8 path: RowQuantize),
 * which onnxruntime-node does not have, the baseline runs a copy with them expanded into the standard
 * ops that compute the same values (src/engine/decide-ops.ts).
 */
import { rmSync } from 'node:fs';

import * as ort from 'onnxruntime-node';

import { expandDecideOps } from '../src/engine/decide-ops.js';
import { float16Tensor } from './ort-float16.js';
import { float16ToFloat32, SEGMENT_IDS_INPUT, STATE_SPAN_INPUT } from '../src/models/builder/index.js';
import { LABEL_INDEX_INPUT, LABEL_LOGITS_OUTPUT, LOGITS_INDEX_INPUT, POSITION_INDEX_INPUT, POSITION_TOKEN_INDEX_INPUT, TOKEN_INDEX_INPUT } from '../src/engine/lm-head-rewrite.js';

export interface BaselineOptions {
  graphFile: string;
  /**
   * The graph holds the engine's own operators (EngineInfo.int8.path 'u8s8'): the baseline runs a
   * copy with them expanded. Said by the caller, so that no other graph (an fp32 one is often
   * hundreds of MB inline) is read and decoded again only to find none.
   */
  hasEngineOps: boolean;
  threads: number;
  provider: 'cpu' | 'cuda';
  numLayers: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
  /** Padded tokens (rows x longest row) per forward pass; a pass holds at least one row. */
  passTokens: number;
}

export interface BaselineRow {
  /** prefix ++ suffix */
  tokens: Int32Array;
  labels: Int32Array;
}

export interface BaselineStats {
  passes: number;
  rows: number;
  /** Real tokens computed (every row's full length). */
  computedTokens: number;
  /** Padding the passes computed on top. */
  paddedTokens: number;
  maxRowsPerPass: number;
}


export class FreshBaseline {
  private constructor(
    private readonly session: ort.InferenceSession,
    private readonly options: BaselineOptions,
    /** The graph gathers one position per row before the LM head. */
    readonly gathered: boolean,
    private readonly kvType: 'float32' | 'float16',
    private readonly hasPositionIds: boolean,
    /** The rewrite's index is [batch, positions] rather than [batch] (older caches). */
    private readonly indexIs2d: boolean,
    /** The index is decide_token_index, flat over the pass's rows x tokens (the current rewrite). */
    private readonly flatIndex: boolean,
    /** A packing graph: every token gets segment 0, which makes it an ordinary causal row. */
    private readonly hasSegmentIds: boolean,
    /** The graph returns the labels' logits itself (the rewrite's scoring head), not `logits`. */
    private readonly scoringHead: boolean,
    /** A graph with causal states: an empty decide_state_span runs each pass whole (no state part). */
    private readonly hasStateSpan: boolean,
  ) {}

  static async load(options: BaselineOptions): Promise<FreshBaseline> {
    // The copy sits beside the graph (its external data resolves from the same folder) and goes once
    // the session has read it.
    const portable = options.graphFile.replace(/\.onnx$/, '') + `.baseline-${process.pid}.onnx`;
    const expanded = options.hasEngineOps ? expandDecideOps(options.graphFile, portable) : 0;
    let session: ort.InferenceSession;
    try {
      session = await ort.InferenceSession.create(expanded > 0 ? portable : options.graphFile, {
        executionProviders: [options.provider],
        intraOpNumThreads: options.threads,
        interOpNumThreads: 1,
        graphOptimizationLevel: 'all',
      });
    } finally {
      rmSync(portable, { force: true });
    }
    const past = session.inputMetadata.find((m) => m.name === 'past_key_values.0.key');
    const kvType = past !== undefined && past.isTensor && past.type === 'float16' ? 'float16' : 'float32';
    const index = session.inputMetadata.find((m) => m.name === TOKEN_INDEX_INPUT || m.name === LOGITS_INDEX_INPUT);
    return new FreshBaseline(
      session,
      options,
      index !== undefined,
      kvType,
      session.inputNames.includes('position_ids'),
      index !== undefined && index.isTensor && index.shape.length === 2,
      index?.name === TOKEN_INDEX_INPUT,
      session.inputNames.includes(SEGMENT_IDS_INPUT),
      session.inputNames.includes(LABEL_INDEX_INPUT),
      session.inputNames.includes(STATE_SPAN_INPUT),
    );
  }

  /** Label logits of every row, in input order. */
  async score(rows: BaselineRow[]): Promise<{ labelLogits: Float32Array[]; stats: BaselineStats }> {
    const order = rows.map((_, i) => i).sort((a, b) => rows[a]!.tokens.length - rows[b]!.tokens.length);
    const out = new Array<Float32Array>(rows.length);
    const stats: BaselineStats = { passes: 0, rows: rows.length, computedTokens: 0, paddedTokens: 0, maxRowsPerPass: 0 };
    let begin = 0;
    while (begin < order.length) {
      // Sorted ascending: the last row of a pass is its longest.
      let end = begin + 1;
      while (end < order.length && (end + 1 - begin) * rows[order[end]!]!.tokens.length <= this.options.passTokens) end++;
      const pass = order.slice(begin, end);
      const logits = await this.runPass(pass.map((i) => rows[i]!));
      pass.forEach((rowIndex, b) => {
        out[rowIndex] = logits[b]!;
      });
      const longest = rows[pass[pass.length - 1]!]!.tokens.length;
      for (const i of pass) {
        stats.computedTokens += rows[i]!.tokens.length;
        stats.paddedTokens += longest - rows[i]!.tokens.length;
      }
      stats.passes += 1;
      stats.maxRowsPerPass = Math.max(stats.maxRowsPerPass, pass.length);
      begin = end;
    }
    return { labelLogits: out, stats };
  }

  /** One forward pass; returns each row's label logits at its last position. */
  private async runPass(passRows: BaselineRow[]): Promise<Float32Array[]> {
    const rows = passRows.map((r) => r.tokens);
    const { numLayers, numKvHeads, headDim, vocabSize } = this.options;
    const batch = rows.length;
    const seq = Math.max(...rows.map((r) => r.length));
    const ids = new BigInt64Array(batch * seq);
    const mask = new BigInt64Array(batch * seq);
    const positions = new BigInt64Array(batch * seq);
    const last = new BigInt64Array(batch);
    rows.forEach((row, b) => {
      const base = b * seq;
      for (let s = 0; s < row.length; s++) {
        ids[base + s] = BigInt(row[s]!);
        mask[base + s] = 1n;
        positions[base + s] = BigInt(s);
      }
      // The current rewrite's token index counts over the whole pass (row b starts at b * seq).
      last[b] = BigInt((this.flatIndex ? b * seq : 0) + row.length - 1);
    });
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', ids, [batch, seq]),
      attention_mask: new ort.Tensor('int64', mask, [batch, seq]),
    };
    if (this.hasPositionIds) feeds.position_ids = new ort.Tensor('int64', positions, [batch, seq]);
    if (this.gathered) feeds[this.flatIndex ? TOKEN_INDEX_INPUT : LOGITS_INDEX_INPUT] = new ort.Tensor('int64', last, this.indexIs2d ? [batch, 1] : [batch]);
    if (this.hasSegmentIds) feeds[SEGMENT_IDS_INPUT] = new ort.Tensor('int64', new BigInt64Array(batch * seq), [batch, seq]);
    if (this.hasStateSpan) feeds[STATE_SPAN_INPUT] = new ort.Tensor('int64', new BigInt64Array(0), [0]);
    const pastDims = [batch, numKvHeads, 0, headDim];
    for (let l = 0; l < numLayers; l++) {
      for (const kind of ['key', 'value']) {
        feeds[`past_key_values.${l}.${kind}`] =
          this.kvType === 'float16' ? float16Tensor(new Uint16Array(0), pastDims) : new ort.Tensor('float32', new Float32Array(0), pastDims);
      }
    }
    if (this.scoringHead) {
      // The rewrite's scoring head, flat indices over one position per row: row * vocab + label per
      // label (logits [batch, 1, vocab]); per row a token of it (row * vocab), or, in heads of an
      // older rewrite, the row (log-sum-exps [batch, 1]). Only the label logits are read.
      const labelIndex: bigint[] = [];
      passRows.forEach((row, b) => row.labels.forEach((label) => labelIndex.push(BigInt(b * vocabSize + label))));
      feeds[LABEL_INDEX_INPUT] = new ort.Tensor('int64', BigInt64Array.from(labelIndex), [labelIndex.length]);
      const byToken = this.session.inputNames.includes(POSITION_TOKEN_INDEX_INPUT);
      feeds[byToken ? POSITION_TOKEN_INDEX_INPUT : POSITION_INDEX_INPUT] = new ort.Tensor('int64', BigInt64Array.from(passRows, (_, b) => BigInt(byToken ? b * vocabSize : b)), [batch]);
      const result = await this.session.run(feeds, [LABEL_LOGITS_OUTPUT]);
      const flat = result[LABEL_LOGITS_OUTPUT]!.data as Float32Array;
      let at = 0;
      return passRows.map((row) => {
        const labels = flat.slice(at, at + row.labels.length);
        at += row.labels.length;
        return labels;
      });
    }
    const result = await this.session.run(feeds, ['logits']);
    const logits = result.logits!;
    const positionsPerRow = logits.dims[1]!;
    // An fp16 graph returns fp16 logits: widened once, then read like fp32 ones.
    const data =
      logits.type === 'float32' ? (logits.data as Float32Array)
      : logits.type === 'float16' ? float16ToFloat32(logits.data as Uint16Array)
      : undefined;
    if (data === undefined) throw new Error(`baseline: logits are ${logits.type}; expected float32 or float16`);
    return passRows.map((row, b) => {
      const p = this.gathered ? 0 : row.tokens.length - 1;
      return Float32Array.from(row.labels, (id) => data[(b * positionsPerRow + p) * vocabSize + id]!);
    });
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}
