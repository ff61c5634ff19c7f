/**
 * Whether a model directory is complete: every file the service reads is there and whole. A
 * directory being copied file by file is not a model yet, and the registry must not see it.
 *
 * Complete means: config.json is a valid config; tokenizer.json and tokenizer_config.json (and
 * decision.json when present) parse as JSON, unless decision.json records an import without a
 * tokenizer (a whole model, listed as broken saying which file is missing: knownLoadProblem); a
 * decoder graph exists; and when the graph keeps its
 * weights in external data files, each of them exists and is long enough for every tensor that
 * points into it. Whether ONNX Runtime can then load it is found out by loading it (the registry
 * marks a version that fails as broken).
 *
 * The result is cached per directory and recomputed when any of its files changes size or mtime.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

import onnxProto from 'onnx-proto';

import { findGraphFile, MODEL_FILES, readDecisionFile, readModelConfig, REQUIRED_TOKENIZER_FILES } from '../engine/model-dir.js';

const { onnx } = onnxProto;

/** Graph files above this hold their weights inline; parsing them here would cost seconds. */
const MAX_GRAPH_BYTES_TO_PARSE = 64 * 2 ** 20;

interface Verdict {
  /** Why the directory is not a complete model yet (a copy in progress, a missing file). */
  incomplete?: string;
  /** Why a complete directory is known not to load, found without loading it. */
  broken?: string;
}

const cache = new Map<string, { signature: string; verdict: Verdict }>();

function verdictOf(dir: string): Verdict {
  const signature = directorySignature(dir);
  const cached = cache.get(dir);
  if (cached && cached.signature === signature) return cached.verdict;
  const verdict = check(dir);
  cache.set(dir, { signature, verdict });
  return verdict;
}

/** Why `dir` is not a complete model directory, or undefined when it is. */
export function incompleteReason(dir: string): string | undefined {
  return verdictOf(dir).incomplete;
}

/**
 * Why a complete model directory cannot be loaded, when that shows without loading it: an import
 * without tokenizer.json or tokenizer_config.json (decision.json says so, and the file is still
 * missing), or NaN or infinite weights in a graph small enough to read here. The registry lists such a version
 * as broken from the start instead of failing on first use.
 */
export function knownLoadProblem(dir: string): string | undefined {
  return verdictOf(dir).broken;
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

/**
 * The first entry of a model directory (or its onnx/ folder) that is neither a regular file nor a
 * folder: reading a named pipe blocks the whole process until something writes to it.
 */
function specialFile(dir: string): string | undefined {
  for (const sub of ['', 'onnx']) {
    let names: string[];
    try {
      names = readdirSync(path.join(dir, sub));
    } catch {
      continue;
    }
    for (const name of names) {
      const file = path.join(dir, sub, name);
      try {
        const st = statSync(file);
        if (!st.isFile() && !st.isDirectory()) return file;
      } catch {
        // removed while we looked, or a dangling link: the checks below report what is missing
      }
    }
  }
  return undefined;
}

function check(dir: string): Verdict {
  const special = specialFile(dir);
  if (special) return { incomplete: `${special}: not a regular file (a named pipe, socket or device); a model directory holds files` };
  try {
    readModelConfig(dir);
  } catch (err) {
    return { incomplete: (err as Error).message };
  }
  const withoutTokenizer = importedWithoutTokenizer(dir);
  let broken: string | undefined;
  for (const name of [...REQUIRED_TOKENIZER_FILES, MODEL_FILES.decision]) {
    const file = path.join(dir, name);
    if (!existsSync(file)) {
      if (name === MODEL_FILES.decision) continue;
      // An import without tokenizer files is a whole model that cannot serve, not a copy in
      // progress to hide: listed as broken, saying which file to add.
      if (withoutTokenizer) {
        broken ??=
          name === MODEL_FILES.tokenizer
            ? `the model has no tokenizer: ${file} is missing (imported without one); add the model's tokenizer.json and tokenizer_config.json to the model directory`
            : `the model has no tokenizer_config.json: ${file} is missing (imported without one); add the model's tokenizer_config.json (with its chat template) to the model directory`;
        continue;
      }
      return { incomplete: `${file}: file is missing` };
    }
    try {
      JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      return { incomplete: `${file}: not valid JSON (incomplete copy?)` };
    }
  }
  let graph: string;
  try {
    graph = findGraphFile(dir);
  } catch (err) {
    return { incomplete: (err as Error).message };
  }
  const graphVerdict = graphProblems(graph);
  return { ...graphVerdict, ...(graphVerdict.incomplete === undefined && broken ? { broken } : {}) };
}

/** True when decision.json says `decide import-model` wrote this directory without a tokenizer. */
function importedWithoutTokenizer(dir: string): boolean {
  try {
    return readDecisionFile(dir)?.import?.tokenizer === false;
  } catch {
    return false;
  }
}

/**
 * Checks that every external data file the graph names exists and covers offset + length, and,
 * for a graph small enough to parse here, that no inline float weight holds a NaN or an infinity.
 */
function graphProblems(graph: string): Verdict {
  const size = statSync(graph).size;
  if (size === 0) return { incomplete: `${graph}: file is empty` };
  if (size > MAX_GRAPH_BYTES_TO_PARSE) return {};
  let model: onnxProto.onnx.ModelProto;
  try {
    model = onnx.ModelProto.decode(readFileSync(graph));
  } catch (err) {
    return { incomplete: `${graph}: not a readable ONNX model (${(err as Error).message}; incomplete copy?)` };
  }
  const needed = new Map<string, number>();
  let nan: string | undefined;
  for (const tensor of model.graph?.initializer ?? []) {
    if (tensor.dataLocation === onnx.TensorProto.DataLocation.EXTERNAL) {
      const entry = Object.fromEntries((tensor.externalData ?? []).map((e) => [e.key, e.value]));
      if (!entry.location) continue;
      const end = Number(entry.offset ?? 0) + Number(entry.length ?? 0);
      needed.set(entry.location, Math.max(needed.get(entry.location) ?? 0, end));
    } else if (nan === undefined && holdsNonFinite(tensor)) {
      nan = `${graph}: weight ${tensor.name} holds NaN or infinite values; every score it touches would be NaN`;
    }
  }
  for (const [location, end] of needed) {
    const file = path.join(path.dirname(graph), location);
    if (!existsSync(file)) return { incomplete: `${file}: external data file is missing` };
    const have = statSync(file).size;
    if (have < end) return { incomplete: `${file}: external data file has ${have} bytes, the graph needs ${end} (incomplete copy?)` };
  }
  return nan ? { broken: nan } : {};
}

/** Whether an inline fp32 or fp16 initializer holds a NaN or an infinity. */
function holdsNonFinite(tensor: onnxProto.onnx.ITensorProto): boolean {
  const raw = tensor.rawData;
  if (tensor.dataType === onnx.TensorProto.DataType.FLOAT) {
    if (raw && raw.length >= 4) {
      const copy = new Uint8Array(raw); // rawData may be unaligned
      const values = new Float32Array(copy.buffer, 0, copy.length >> 2);
      for (let i = 0; i < values.length; i++) if (values[i]! - values[i]! !== 0) return true;
      return false;
    }
    return (tensor.floatData ?? []).some((v) => !Number.isFinite(v));
  }
  if (tensor.dataType === onnx.TensorProto.DataType.FLOAT16 && raw && raw.length >= 2) {
    const copy = new Uint8Array(raw);
    const halves = new Uint16Array(copy.buffer, 0, copy.length >> 1);
    // An all-ones exponent: infinity (mantissa 0) or NaN.
    for (let i = 0; i < halves.length; i++) if ((halves[i]! & 0x7c00) === 0x7c00) return true;
  }
  return false;
}
