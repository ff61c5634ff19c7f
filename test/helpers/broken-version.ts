/** A model version that is complete on disk but cannot load, for the tests of how it is listed. */
import { cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { tinyModelDir } from './tiny-model.js';

/** Writes `<modelsDir>/other-2026-10`: the tiny model, but its config names more layers than its graph has. */
export async function brokenVersion(modelsDir: string): Promise<void> {
  const tiny = await tinyModelDir();
  const dir = path.join(modelsDir, 'other-2026-10');
  mkdirSync(dir);
  for (const name of ['tokenizer.json', 'tokenizer_config.json', 'decision.json']) cpSync(path.join(tiny, name), path.join(dir, name));
  symlinkSync(path.join(tiny, 'onnx'), path.join(dir, 'onnx'), 'dir');
  const config = JSON.parse(readFileSync(path.join(tiny, 'config.json'), 'utf8')) as Record<string, number>;
  writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ ...config, num_hidden_layers: config.num_hidden_layers! + 3 }));
}
