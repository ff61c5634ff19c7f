/**
 * ONNX exports copied in as they are (docs/models.md, "ONNX exports that load as-is"): the graph
 * under each file name an Optimum export uses, with its weights inline or in an external data file
 * beside it, loads and scores exactly as the same graph at onnx/model.onnx does.
 */
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { makeModel } from '../../src/models/builder/make-model.js';
import { GRAPH_CANDIDATES } from '../../src/engine/model-dir.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

const GROUP = { prefix: Int32Array.of(5, 9, 17, 33), suffixes: [{ tokens: Int32Array.of(40, 41), labels: Int32Array.of(1, 2, 3, 4) }] };

let scratch: string;
/** Builder output with inline weights (the shared tiny model) and with onnx/model.onnx_data. */
const sources: Record<'inline' | 'external', string> = { inline: '', external: '' };
const expected: Partial<Record<'inline' | 'external', Float32Array>> = {};

async function scoreOnce(modelDir: string): Promise<{ graphFile: string; logits: Float32Array }> {
  const engine = await Engine.load({ modelDir, threads: 1 });
  try {
    const [[score]] = await engine.score([GROUP]);
    return { graphFile: engine.info.graphFile, logits: score!.labelLogits };
  } finally {
    engine.close();
  }
}

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'export-layouts-'));
  sources.inline = await tinyModelDir();
  sources.external = path.join(scratch, 'built-external');
  await makeModel({ preset: 'tiny', outDir: sources.external, seed: 3, externalData: true });
  for (const kind of ['inline', 'external'] as const) expected[kind] = (await scoreOnce(sources[kind])).logits;
}, 120_000);

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

// Every name with external data (as large exports come); inline weights once (a small export).
const LAYOUTS = [
  ...GRAPH_CANDIDATES.filter((f) => f !== 'onnx/model.onnx').map((name) => [name, 'external'] as const),
  ['decoder_model_merged.onnx', 'inline'] as const,
];

describe('exports copied in as they are', () => {
  it.each(LAYOUTS)('a graph at %s with %s weights loads and scores like onnx/model.onnx', async (graphName, kind) => {
    const dir = path.join(scratch, `${kind}-${graphName.replace(/\W/g, '_')}`);
    await mkdir(path.join(dir, path.dirname(graphName)), { recursive: true });
    for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) await copyFile(path.join(sources[kind], f), path.join(dir, f));
    await copyFile(path.join(sources[kind], 'onnx', 'model.onnx'), path.join(dir, graphName));
    // External data keeps the file name the graph records (model.onnx_data), next to the graph.
    if (kind === 'external') await copyFile(path.join(sources[kind], 'onnx', 'model.onnx_data'), path.join(dir, path.dirname(graphName), 'model.onnx_data'));
    const { graphFile, logits } = await scoreOnce(dir);
    expect(path.relative(dir, graphFile)).toMatch(/decide-gather\.onnx$/); // the LM-head rewrite applied
    expect(Array.from(logits)).toEqual(Array.from(expected[kind]!));
  });
});
