/**
 * Whether a model directory is complete: every file the service reads is there and whole. A
 * directory being copied file by file is not a model yet, and the registry must not see it.
 *
 * Complete means: config.json is a valid config; tokenizer.json and tokenizer_config.json (and
 * decision.json when present) parse as JSON, unless decision.json records an import without a
 * tokenizer (the service then refuses the model saying so); a decoder graph exists; and when the graph keeps its
 * weights in external data files, each of them exists and is long enough for every tensor that
 * points into it. Whether ONNX Runtime can then load it is found out by loading it (the registry
 * marks a version that fails as broken).
 *
 * The result is cached per directory and recomputed when any of its files changes size or mtime.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

import onnxProto from 'onnx-proto';

import { findGraphFile, readModelConfig } from '../engine/model-dir.js';

const { onnx } = onnxProto;

/** Graph files above this hold their weights inline; parsing them here would cost seconds. */
const MAX_GRAPH_BYTES_TO_PARSE = 64 * 2 ** 20;

const cache = new Map<string, { signature: string; reason: string | undefined }>();

/** Why `dir` is not a complete model directory, or undefined when it is. */
export function incompleteReason(dir: string): string | undefined {
  const signature = directorySignature(dir);
  const cached = cache.get(dir);
  if (cached && cached.signature === signature) return cached.reason;
  const reason = check(dir);
  cache.set(dir, { signature, reason });
  return reason;
}

/** Size and mtime of every file in the directory and one level below (onnx/): a copy in progress changes it. */
export function directorySignature(dir: string): string {
  const parts: string[] = [];
  const walk = (sub: string, depth: number) => {
    let names: string[];
    try {
      names = readdirSync(path.join(dir, sub)).sort();
    } catch {
      return;
    }
    for (const name of names) {
      const rel = path.join(sub, name);
      try {
        const st = statSync(path.join(dir, rel));
        if (st.isDirectory()) {
          if (depth < 1) walk(rel, depth + 1);
        } else parts.push(`${rel}:${st.size}:${st.mtimeMs}`);
      } catch {
        parts.push(`${rel}:gone`);
      }
    }
  };
  walk('', 0);
  return parts.join('|');
}

function check(dir: string): string | undefined {
  try {
    readModelConfig(dir);
  } catch (err) {
    return (err as Error).message;
  }
  const withoutTokenizer = importedWithoutTokenizer(dir);
  for (const name of ['tokenizer.json', 'tokenizer_config.json', 'decision.json']) {
    const file = path.join(dir, name);
    if (!existsSync(file)) {
      if (name === 'decision.json') continue;
      // An import without tokenizer files is a whole model the service refuses by name (the
      // tokenizer is missing), not a copy in progress to hide.
      if (withoutTokenizer) continue;
      return `${file}: file is missing`;
    }
    try {
      JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      return `${file}: not valid JSON (incomplete copy?)`;
    }
  }
  let graph: string;
  try {
    graph = findGraphFile(dir);
  } catch (err) {
    return (err as Error).message;
  }
  return externalDataProblem(graph);
}

/** True when decision.json says `decide import-model` wrote this directory without a tokenizer. */
function importedWithoutTokenizer(dir: string): boolean {
  try {
    const decision = JSON.parse(readFileSync(path.join(dir, 'decision.json'), 'utf8')) as { import?: { tokenizer?: unknown } };
    return decision.import?.tokenizer === false;
  } catch {
    return false;
  }
}

/** Checks that every external data file the graph names exists and covers offset + length. */
function externalDataProblem(graph: string): string | undefined {
  const size = statSync(graph).size;
  if (size === 0) return `${graph}: file is empty`;
  if (size > MAX_GRAPH_BYTES_TO_PARSE) return undefined;
  let model: onnxProto.onnx.ModelProto;
  try {
    model = onnx.ModelProto.decode(readFileSync(graph));
  } catch (err) {
    return `${graph}: not a readable ONNX model (${(err as Error).message}; incomplete copy?)`;
  }
  const needed = new Map<string, number>();
  for (const tensor of model.graph?.initializer ?? []) {
    if (tensor.dataLocation !== onnx.TensorProto.DataLocation.EXTERNAL) continue;
    const entry = Object.fromEntries((tensor.externalData ?? []).map((e) => [e.key, e.value]));
    if (!entry.location) continue;
    const end = Number(entry.offset ?? 0) + Number(entry.length ?? 0);
    needed.set(entry.location, Math.max(needed.get(entry.location) ?? 0, end));
  }
  for (const [location, end] of needed) {
    const file = path.join(path.dirname(graph), location);
    if (!existsSync(file)) return `${file}: external data file is missing`;
    const have = statSync(file).size;
    if (have < end) return `${file}: external data file has ${have} bytes, the graph needs ${end} (incomplete copy?)`;
  }
  return undefined;
}
