/**
 * A reference-only copy of a builder-made graph whose LM head reads the last position alone:
 * a Slice of the final hidden states to [batch, 1, hidden] before the LM head MatMul. A stock
 * full-sequence forward computes logits for every position over the whole vocabulary (a vocabulary
 * row per token: 151,936 floats for a Qwen3-sized head) and the reference keeps one row of them;
 * this copy computes that one row, so comparing dozens of sequences of up to 340 tokens with the
 * engine costs the transformer body only.
 *
 * Still independent of the engine: its own graph edit here, run through the onnxruntime-node JS API
 * with a full sequence and an empty past. Each copy is checked once, when built, against the stock
 * graph's last-position logits (test/helpers/reference.ts).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { LM_HEAD_NODE } from '../../src/models/builder/decoder-graph.js';
import { int64Tensor, makeNode, onnx } from '../../src/models/builder/onnx-writer.js';
import { asFloat32, emptyPast, oncePerModelDir, REFERENCE_SESSION_OPTIONS, referenceLastLogits, referenceModel, type ReferenceModel } from './reference.js';

/** An end past any sequence length: ONNX Slice clamps it to the end. */
const TO_END = Number.MAX_SAFE_INTEGER;
/** The copy and the stock graph differ by the LM head's summation order at most. */
const AGREEMENT = 1e-5;

const sessions = new Map<string, Promise<ort.InferenceSession>>();

/** The logits at the last position of one full-sequence forward of `ids` with an empty past. */
export async function lastPositionLogits(modelDir: string, ids: Int32Array): Promise<Float32Array> {
  return run(await lastPositionSession(modelDir), await referenceModel(modelDir), ids);
}

async function run(session: ort.InferenceSession, model: ReferenceModel, ids: Int32Array): Promise<Float32Array> {
  if (ids.length === 0) throw new Error('lastPositionLogits: empty sequence');
  const seq = ids.length;
  const out = await session.run(
    {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, (v) => BigInt(v)), [1, seq]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(seq).fill(1n), [1, seq]),
      position_ids: new ort.Tensor('int64', BigInt64Array.from({ length: seq }, (_, i) => BigInt(i)), [1, seq]),
      ...emptyPast(model, 1),
    },
    ['logits'],
  );
  const logits = asFloat32(out.logits!);
  if (logits.length !== model.vocabSize) throw new Error(`lastPositionLogits: ${logits.length} logits, expected one row of ${model.vocabSize}`);
  return logits;
}

/** The cached, checked copy of a model directory's graph (one per directory per process). */
function lastPositionSession(modelDir: string): Promise<ort.InferenceSession> {
  return oncePerModelDir(sessions, modelDir, buildChecked);
}

async function buildChecked(modelDir: string): Promise<ort.InferenceSession> {
  const model = await referenceModel(modelDir);
  const bytes = await readFile(path.join(modelDir, 'onnx', 'model.onnx'));
  const session = await ort.InferenceSession.create(sliceBeforeLmHead(bytes), REFERENCE_SESSION_OPTIONS);
  const probe = Int32Array.from({ length: 9 }, (_, i) => (i * 7919 + 11) % model.vocabSize);
  const sliced = await run(session, model, probe);
  const stock = await referenceLastLogits(modelDir, probe);
  let worst = 0;
  for (let i = 0; i < stock.length; i++) worst = Math.max(worst, Math.abs(sliced[i]! - stock[i]!));
  if (!(worst < AGREEMENT)) {
    await session.release();
    throw new Error(`last-position reference: differs from the stock graph's last position by ${worst}`);
  }
  return session;
}

/** The model with the LM head's input sliced to the last position ([batch, seq, h] -> [batch, 1, h]). */
function sliceBeforeLmHead(bytes: Uint8Array): Uint8Array {
  const model = onnx.ModelProto.decode(bytes);
  const graph = model.graph!;
  const nodes = graph.node!;
  const at = nodes.findIndex((n) => n.name === LM_HEAD_NODE);
  if (at < 0) throw new Error(`last-position reference: no ${LM_HEAD_NODE} node (not a builder-made graph)`);
  const head = nodes[at]!;
  if (graph.initializer!.some((t) => t.dataLocation === onnx.TensorProto.DataLocation.EXTERNAL)) {
    throw new Error('last-position reference: the graph keeps its weights in external data; use an inline model');
  }
  const names = { starts: 'reference_last/starts', ends: 'reference_last/ends', axes: 'reference_last/axes', out: 'reference_last/hidden' };
  graph.initializer!.push(int64Tensor(names.starts, [1], [-1]), int64Tensor(names.ends, [1], [TO_END]), int64Tensor(names.axes, [1], [1]));
  nodes.splice(at, 0, makeNode('Slice', [head.input![0]!, names.starts, names.ends, names.axes], [names.out], '/reference_last/Slice'));
  head.input![0] = names.out;
  return onnx.ModelProto.encode(model).finish();
}
