/**
 * One-time check that the LM-head rewrite computes the same logits as the stock graph: both graphs
 * run a small two-row batch (one row padded) through the onnxruntime-node JS API, and the gathered
 * logits must equal the stock graph's logits at the same positions. Throws on any mismatch.
 */
import ort from 'onnxruntime-node';

import { float16ToFloat32 } from './builder/onnx-writer.js';
import { LOGITS_INDEX_INPUT } from './lm-head-rewrite.js';

type Feeds = Record<string, ort.Tensor>;

function intTensor(type: string, values: number[], dims: number[]): ort.Tensor {
  return type === 'int32'
    ? new ort.Tensor('int32', Int32Array.from(values), dims)
    : new ort.Tensor('int64', BigInt64Array.from(values.map(BigInt)), dims);
}

function buildFeeds(session: ort.InferenceSession, rows: number[][]): Feeds {
  const batch = rows.length;
  const seq = Math.max(...rows.map((r) => r.length));
  const ids: number[] = [];
  const mask: number[] = [];
  const positions: number[] = [];
  for (const row of rows) {
    for (let i = 0; i < seq; i++) {
      ids.push(row[i] ?? 0);
      mask.push(i < row.length ? 1 : 0);
      positions.push(i);
    }
  }
  const feeds: Feeds = {};
  for (const meta of session.inputMetadata) {
    if (!meta.isTensor) throw new Error(`non-tensor input ${meta.name}`);
    const type = meta.type;
    if (meta.name === 'input_ids') feeds[meta.name] = intTensor(type, ids, [batch, seq]);
    else if (meta.name === 'attention_mask') feeds[meta.name] = intTensor(type, mask, [batch, seq]);
    else if (meta.name === 'position_ids') feeds[meta.name] = intTensor(type, positions, [batch, seq]);
    else if (meta.name === LOGITS_INDEX_INPUT) {
      feeds[meta.name] = intTensor('int64', rows.map((r) => r.length - 1), [batch]);
    } else if (meta.name === 'use_cache_branch') feeds[meta.name] = new ort.Tensor('bool', [true], [1]);
    else if (meta.name.startsWith('past_key_values.')) {
      const dims = meta.shape.map((d, i) => (i === 0 ? batch : i === 2 ? 0 : Number(d)));
      feeds[meta.name] =
        type === 'float16' ? new ort.Tensor('float16', new Uint16Array(0), dims) : new ort.Tensor('float32', new Float32Array(0), dims);
    } else throw new Error(`unexpected input ${meta.name}`);
  }
  return feeds;
}

function toFloat(tensor: ort.Tensor): Float32Array {
  return tensor.type === 'float32' ? (tensor.data as Float32Array) : float16ToFloat32(tensor.data as Uint16Array);
}

export async function verifyRewrite(stockGraph: string, rewrittenGraph: string): Promise<void> {
  // Ids below 100, so any real vocabulary (and the tiny test checkpoints' 512) holds them.
  const rows = [
    [17, 11, 87, 0, 31, 24],
    [40, 79, 26],
  ];
  const stock = await ort.InferenceSession.create(stockGraph);
  const rewritten = await ort.InferenceSession.create(rewrittenGraph);
  try {
    const stockOut = await stock.run(buildFeeds(stock, rows), ['logits']);
    const newOut = await rewritten.run(buildFeeds(rewritten, rows), ['logits']);
    const stockLogits = stockOut.logits!;
    const newLogits = newOut.logits!;
    const [, seq, vocab] = stockLogits.dims as [number, number, number];
    if (newLogits.dims[1] !== 1 || newLogits.dims[2] !== vocab) {
      throw new Error(`rewritten logits have shape [${newLogits.dims.join(', ')}]`);
    }
    const a = toFloat(stockLogits);
    const b = toFloat(newLogits);
    const tolerance = stockLogits.type === 'float16' ? 2e-2 : 1e-4;
    rows.forEach((row, r) => {
      const stockBase = (r * seq + row.length - 1) * vocab;
      for (let v = 0; v < vocab; v++) {
        const x = a[stockBase + v]!;
        const y = b[r * vocab + v]!;
        if (!(Math.abs(x - y) <= tolerance * Math.max(1, Math.abs(x)))) {
          throw new Error(`rewrite mismatch at row ${r}, token ${v}: ${x} vs ${y}`);
        }
      }
    });
  } finally {
    await stock.release();
    await rewritten.release();
  }
}
