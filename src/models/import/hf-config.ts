/**
 * Hugging Face config.json -> the decoder graph's shape and features, per family (Qwen3, Qwen2,
 * Llama, Mistral, Gemma). Reads both config styles: transformers 4.x (top-level `rope_theta`,
 * `rope_scaling` with `type` or `rope_type`) and 5.x (`rope_parameters`). Anything the graph
 * cannot compute exactly is an ImportError naming the field, before a byte is written.
 */
import { EngineError } from '../../errors/engine-error.js';
import type { DecoderFeatures } from '../builder/decoder-features.js';
import type { ModelShape } from '../builder/presets.js';

/**
 * A checkpoint that cannot be imported, or a model that cannot be written from it: code
 * ERR_MODEL_IMPORT, the message naming the file or the field. (importModel's own options of the
 * wrong name or kind are EngineError ERR_INPUT, refused before this begins.)
 */
export class ImportError extends EngineError {
  /** `cause`: a ModelOutputError, which `decide import-model` words in its flags' terms. */
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_MODEL_IMPORT', message, options);
    this.name = 'ImportError';
  }
}

export type Family = 'qwen3' | 'qwen2' | 'llama' | 'mistral' | 'gemma';
export const FAMILIES: readonly Family[] = ['qwen3', 'qwen2', 'llama', 'mistral', 'gemma'];

/** model_types that are known and deliberately refused, with the reason. */
const REFUSED: Record<string, string> = {
  mixtral: 'a mixture-of-experts model (MoE layers are not implemented)',
  qwen2_moe: 'a mixture-of-experts model (MoE layers are not implemented)',
  qwen3_moe: 'a mixture-of-experts model (MoE layers are not implemented)',
  gemma2: 'Gemma 2 (logit soft-capping, alternating sliding-window layers and extra norms are not implemented)',
  gemma3: 'Gemma 3 (alternating sliding-window layers and extra norms are not implemented)',
  gemma3_text: 'Gemma 3 (alternating sliding-window layers and extra norms are not implemented)',
};

export interface RopeSettings {
  theta: number;
  type: 'default' | 'linear' | 'llama3';
  factor?: number;
  lowFreqFactor?: number;
  highFreqFactor?: number;
  originalMaxPositionEmbeddings?: number;
}

export interface ImportPlan {
  family: Family;
  modelType: string;
  shape: ModelShape;
  features: Partial<DecoderFeatures>;
  rope: RopeSettings;
  /** Sliding-window attention, when the config has an active window shorter than the context. */
  slidingWindow?: { size: number; layers: boolean[] };
}

type Json = Record<string, unknown>;

/**
 * Upper bounds on the sizes a config may declare, checked before anything is allocated. Each is far
 * above any model this engine can serve (the largest open decoders: ~130k hidden, 256 heads of 256,
 * ~200 layers, ~260k vocabulary), so a real config never meets them; a hostile or corrupt one
 * (head_dim 2**30, a billion layers) is refused at once instead of exhausting memory building the graph.
 */
export const CONFIG_LIMITS: Readonly<Record<string, number>> = {
  hidden_size: 2 ** 18,
  num_attention_heads: 2 ** 12,
  num_key_value_heads: 2 ** 12,
  head_dim: 2 ** 12,
  intermediate_size: 2 ** 20,
  num_hidden_layers: 2 ** 12,
  vocab_size: 2 ** 23,
  max_position_embeddings: 2 ** 26,
};

function num(cfg: Json, key: string, opts: { int?: boolean; positive?: boolean; fallback?: number } = {}): number {
  const v = cfg[key] ?? opts.fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || (opts.int && (!Number.isInteger(v) || v <= 0)) || (opts.positive && v <= 0)) {
    const want = opts.int ? 'a positive integer' : opts.positive ? 'a positive number' : 'a number';
    throw new ImportError(`config.json: "${key}" must be ${want} (got ${JSON.stringify(cfg[key])?.slice(0, 100)})`);
  }
  const limit = CONFIG_LIMITS[key];
  if (limit !== undefined && v > limit) throw new ImportError(`config.json: "${key}" is ${v}, more than any model this importer builds (at most ${limit})`);
  return v;
}

/**
 * A boolean field: absent or null gives `fallback`; anything but true or false (the string "true",
 * 1) is refused by name rather than read as the fallback, which would change the model silently.
 */
function flag(cfg: Json, key: string, fallback: boolean): boolean {
  const v = cfg[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'boolean') {
    throw new ImportError(`config.json: "${key}" must be true or false (got ${JSON.stringify(v)?.slice(0, 100)}, a ${Array.isArray(v) ? 'list' : typeof v})`);
  }
  return v;
}

/** Builds the import plan for a parsed config.json. */
export function planFromConfig(raw: Json): ImportPlan {
  const modelType = raw.model_type;
  if (typeof modelType !== 'string') throw new ImportError('config.json: "model_type" is missing');
  // Own keys only: a model_type such as "__proto__" or "constructor" is not a lookup into Object.prototype.
  if (Object.hasOwn(REFUSED, modelType)) throw new ImportError(`config.json: model_type "${modelType}" is ${REFUSED[modelType]}; it cannot be imported`);
  if (!(FAMILIES as readonly string[]).includes(modelType)) {
    throw new ImportError(`config.json: model_type ${JSON.stringify(modelType.slice(0, 100))} is not supported; supported: ${FAMILIES.join(', ')}`);
  }
  const family = modelType as Family;
  for (const key of ['num_experts', 'num_local_experts', 'n_routed_experts', 'moe_intermediate_size']) {
    const v = raw[key];
    if (typeof v === 'number' && v > 0) throw new ImportError(`config.json: "${key}" is ${v}: mixture-of-experts layers are not implemented`);
  }

  const hiddenSize = num(raw, 'hidden_size', { int: true });
  const numHeads = num(raw, 'num_attention_heads', { int: true });
  const numKvHeads = num(raw, 'num_key_value_heads', { int: true, fallback: numHeads });
  const headDimRaw = raw.head_dim;
  const headDim = headDimRaw === undefined || headDimRaw === null ? Math.floor(hiddenSize / numHeads) : num(raw, 'head_dim', { int: true });
  const maxPos = num(raw, 'max_position_embeddings', { int: true });
  const rope = readRope(raw);
  if (headDim % 2 !== 0) throw new ImportError(`config.json: head_dim ${headDim} is odd; rotary embeddings need an even head size`);
  if (numHeads % numKvHeads !== 0) throw new ImportError(`config.json: num_attention_heads (${numHeads}) is not a multiple of num_key_value_heads (${numKvHeads})`);
  const partial = raw.partial_rotary_factor;
  if (partial !== undefined && partial !== null && partial !== 1) throw new ImportError(`config.json: partial_rotary_factor ${String(partial)} is not supported (only 1)`);

  const tieDefault = family === 'gemma';
  const tie = flag(raw, 'tie_word_embeddings', tieDefault);
  const shape: ModelShape = {
    numLayers: num(raw, 'num_hidden_layers', { int: true }),
    hiddenSize,
    numHeads,
    numKvHeads,
    headDim,
    intermediateSize: num(raw, 'intermediate_size', { int: true }),
    vocabSize: num(raw, 'vocab_size', { int: true }),
    maxPositionEmbeddings: maxPos,
    ropeTheta: rope.theta,
    // A normalization epsilon of 0 or less divides by zero (or takes a negative root) on a zero row.
    rmsNormEps: num(raw, 'rms_norm_eps', { positive: true, fallback: 1e-6 }),
    tieWordEmbeddings: tie,
  };

  const attentionBias = flag(raw, 'attention_bias', false);
  const features: Partial<DecoderFeatures> = {
    qkNorm: family === 'qwen3',
    qkvBias: family === 'qwen2' || attentionBias,
    oBias: family !== 'qwen2' && attentionBias,
    mlpBias: family === 'llama' && flag(raw, 'mlp_bias', false),
    normStyle: family === 'gemma' ? 'onePlusWeight' : 'weight',
    activation: activationOf(family, raw),
    invFreq: rotaryInvFreq(headDim, rope),
  };
  if (family === 'gemma') features.embeddingScale = Math.sqrt(hiddenSize);

  checkLayerTypes(raw, shape.numLayers);
  // A window as long as the context changes nothing.
  const window = slidingWindow(family, raw, shape.numLayers);
  const active = window !== undefined && window.size < maxPos && window.layers.some(Boolean) ? window : undefined;
  if (active) features.slidingWindow = active;
  return { family, modelType, shape, features, rope, ...(active ? { slidingWindow: active } : {}) };
}

function activationOf(family: Family, raw: Json): DecoderFeatures['activation'] {
  const hiddenAct = typeof raw.hidden_act === 'string' ? raw.hidden_act : undefined;
  let name: string;
  if (family !== 'gemma') name = hiddenAct ?? 'silu';
  else if (typeof raw.hidden_activation === 'string') {
    // transformers 4.x GemmaConfig: hidden_activation overrides the legacy hidden_act.
    name = raw.hidden_activation;
  } else {
    // The original Gemma configs say hidden_act "gelu" but the models were trained with the tanh
    // approximation (transformers 4.x used it whenever hidden_activation was unset). Any other
    // hidden_act is taken as written, as transformers 5 (whose GemmaConfig has only hidden_act,
    // default gelu_pytorch_tanh) does.
    name = hiddenAct === undefined || hiddenAct === 'gelu' ? 'gelu_pytorch_tanh' : hiddenAct;
  }
  switch (name) {
    case 'silu':
    case 'swish':
      return 'silu';
    case 'gelu_pytorch_tanh':
    case 'gelu_new':
    case 'gelu_fast':
      return 'gelu_tanh';
    case 'gelu':
      return 'gelu';
    default:
      throw new ImportError(`config.json: activation "${name}" is not supported (silu, gelu, gelu_pytorch_tanh)`);
  }
}

/**
 * `layer_types` (transformers 5) names each layer's kind. Only full and sliding attention exist in
 * these families; any other kind (linear attention, a recurrent or MoE layer) would be imported as
 * plain attention without a word, so it is refused whatever the family and window settings.
 */
function checkLayerTypes(raw: Json, numLayers: number): void {
  const types = raw.layer_types;
  if (types === undefined || types === null) return;
  if (!Array.isArray(types)) throw new ImportError('config.json: "layer_types" must be a list');
  if (types.length !== numLayers) throw new ImportError(`config.json: "layer_types" has ${types.length} entries for ${numLayers} layers`);
  for (const [i, t] of types.entries()) {
    if (t !== 'full_attention' && t !== 'sliding_attention') {
      throw new ImportError(`config.json: layer ${i} has layer type ${JSON.stringify(t)?.slice(0, 100)}, which is not supported (full_attention, sliding_attention)`);
    }
  }
}

/**
 * The sliding window of a config and the layers it applies to, as transformers' modeling code
 * applies it; undefined when every layer attends to the full context. Where a layer is sliding,
 * `sliding_window` must be a positive integer: anything else (-1, 0, 2.5, null, "4096") would
 * otherwise give that layer full attention without a word.
 */
function slidingWindow(family: Family, raw: Json, numLayers: number): { size: number; layers: boolean[] } | undefined {
  const layers = slidingLayers(family, raw, numLayers);
  if (layers === undefined || !layers.some(Boolean)) return undefined;
  const size = raw.sliding_window;
  if (typeof size !== 'number' || !Number.isInteger(size) || size <= 0) {
    throw new ImportError(
      `config.json: "sliding_window" must be a positive integer (a number of tokens) when layers use sliding attention, got ${JSON.stringify(size)?.slice(0, 100) ?? 'no value'}`,
    );
  }
  return { size, layers };
}

/** Which layers use sliding-window attention, as transformers decides it per family. */
function slidingLayers(family: Family, raw: Json, numLayers: number): boolean[] | undefined {
  // Mistral: every layer, whenever sliding_window is set (it ignores layer_types); null is no window.
  if (family === 'mistral') return raw.sliding_window === undefined || raw.sliding_window === null ? undefined : Array<boolean>(numLayers).fill(true);
  // Llama and Gemma 1 have no sliding-window attention, whatever their config carries.
  if (family !== 'qwen2' && family !== 'qwen3') return undefined;
  // Qwen: the layer types (transformers 5), else use_sliding_window for the layers from
  // max_window_layers on (4.x). The sliding_window value alone is unused.
  const layerTypes = Array.isArray(raw.layer_types) ? (raw.layer_types as unknown[]) : undefined;
  if (layerTypes !== undefined) {
    if (layerTypes.length !== numLayers) throw new ImportError(`config.json: "layer_types" has ${layerTypes.length} entries for ${numLayers} layers`);
    for (const t of layerTypes) {
      if (t !== 'full_attention' && t !== 'sliding_attention') throw new ImportError(`config.json: layer type ${JSON.stringify(t)} is not supported (full_attention, sliding_attention)`);
    }
    return layerTypes.map((t) => t === 'sliding_attention');
  }
  if (!flag(raw, 'use_sliding_window', false)) return undefined;
  const from = typeof raw.max_window_layers === 'number' ? raw.max_window_layers : 28;
  return Array.from({ length: numLayers }, (_, i) => i >= from);
}

/** RoPE settings from either config style. */
export function readRope(raw: Json): RopeSettings {
  const params = raw.rope_parameters;
  let source: Json;
  let theta: unknown;
  let field: 'rope_parameters' | 'rope_scaling' = 'rope_scaling';
  if (params !== undefined && params !== null) {
    if (typeof params !== 'object') throw new ImportError('config.json: "rope_parameters" must be an object');
    source = params as Json;
    field = 'rope_parameters';
    if (!('rope_theta' in source) && !('rope_type' in source)) {
      throw new ImportError('config.json: per-layer-type "rope_parameters" are not supported');
    }
    theta = source.rope_theta ?? raw.rope_theta;
  } else {
    const scaling = raw.rope_scaling;
    if (scaling !== undefined && scaling !== null && typeof scaling !== 'object') throw new ImportError('config.json: "rope_scaling" must be an object or null');
    source = (scaling ?? {}) as Json;
    theta = raw.rope_theta;
  }
  const t = theta ?? 10000;
  if (typeof t !== 'number' || !(t > 0)) throw new ImportError(`config.json: rope_theta must be a positive number (got ${JSON.stringify(theta)})`);
  const type = source.rope_type ?? source.type ?? untypedRope(source, field);
  if (type === 'default') return { theta: t, type: 'default' };
  if (type !== 'linear' && type !== 'llama3') {
    throw new ImportError(`config.json: rope scaling type ${JSON.stringify(type)?.slice(0, 100)} is not supported (default, linear, llama3)`);
  }
  const factor = source.factor;
  if (typeof factor !== 'number' || !(factor > 0)) throw new ImportError(`config.json: rope scaling "${type}" needs a positive "factor"`);
  if (type === 'linear') return { theta: t, type: 'linear', factor };
  if (type === 'llama3') {
    const low = source.low_freq_factor;
    const high = source.high_freq_factor;
    const original = source.original_max_position_embeddings;
    if (typeof low !== 'number' || typeof high !== 'number' || typeof original !== 'number' || !(high > low)) {
      throw new ImportError('config.json: llama3 rope scaling needs low_freq_factor < high_freq_factor and original_max_position_embeddings');
    }
    return { theta: t, type: 'llama3', factor, lowFreqFactor: low, highFreqFactor: high, originalMaxPositionEmbeddings: original };
  }
  throw new ImportError(`config.json: rope scaling type "${String(type)}" is not supported (default, linear, llama3)`);
}

/**
 * The type of a RoPE object that names none: plain RoPE when it states nothing beyond `rope_theta`.
 * A scaling field (`factor`, `low_freq_factor`, ...) without a type is refused: transformers has no
 * RoPE function for a missing type, and plain RoPE would drop the scaling the config asks for.
 */
function untypedRope(source: Json, field: 'rope_parameters' | 'rope_scaling'): 'default' {
  const scaling = Object.keys(source).filter((k) => k !== 'rope_theta' && k !== 'rope_type' && k !== 'type');
  if (scaling.length === 0) return 'default';
  throw new ImportError(
    `config.json: "${field}" has ${scaling.slice(0, 4).map((k) => JSON.stringify(k.slice(0, 100))).join(', ')} but no "rope_type" (or "type"): ` +
      'the scaling it asks for is unknown without a type (transformers has no RoPE function for it either); add the type, e.g. "llama3" or "linear"',
  );
}

const f32 = Math.fround;

/**
 * Rotary inverse frequencies as transformers computes them, in float32 step by step
 * (`1 / base ** (arange(0, dim, 2).float() / dim)`, then the llama3 / linear adjustment).
 */
export function rotaryInvFreq(headDim: number, rope: RopeSettings): number[] {
  const base = f32(rope.theta);
  const inv = Array.from({ length: headDim / 2 }, (_, k) => f32(1 / f32(base ** f32((2 * k) / headDim))));
  if (rope.type === 'default') return inv;
  const factor = f32(rope.factor!);
  if (rope.type === 'linear') return inv.map((v) => f32(v / factor));
  const oldCtx = f32(rope.originalMaxPositionEmbeddings!);
  const low = f32(rope.lowFreqFactor!);
  const high = f32(rope.highFreqFactor!);
  const lowWavelen = f32(oldCtx / low);
  const highWavelen = f32(oldCtx / high);
  return inv.map((v) => {
    // torch evaluates `scalar / tensor` as reciprocal(tensor) * scalar.
    const wavelen = f32(f32(1 / v) * f32(2 * Math.PI));
    const scaled = wavelen > lowWavelen ? f32(v / factor) : v;
    const medium = !(wavelen < highWavelen) && !(wavelen > lowWavelen);
    if (!medium) return scaled;
    const smooth = f32(f32(f32(f32(1 / wavelen) * oldCtx) - low) / f32(high - low));
    return f32(f32(f32(f32(1 - smooth) * scaled) / factor) + f32(smooth * scaled));
  });
}
