/**
 * The engine's counters, declared once: name (the native binding's key), unit and help. The
 * NativeCounters type, /metrics (src/server/metrics.ts), the benchmark's sums (bench/systems.ts) and
 * the docs' table (docs/api.md, checked by test/unit/engine-tables-docs.test.ts) derive from these
 * rows, and test/native/engine-counters.test.ts checks the binding's keys against them.
 */

export type CounterUnit = 'calls' | 'tokens' | 'passes' | 'prefixes' | 'copies' | 'moves' | 'bytes' | 'milliseconds';

export interface EngineCounterSpec {
  readonly name: string;
  readonly unit: CounterUnit;
  readonly help: string;
}

/** Cumulative since load; each call's result carries its own. A call counts when it ends. */
export const ENGINE_COUNTERS = [
  { name: 'calls', unit: 'calls', help: 'Score calls into the native engine (each one coalesced batch).' },
  { name: 'prefixTokensComputed', unit: 'tokens', help: 'Prefix tokens run through the model.' },
  { name: 'cachedTokens', unit: 'tokens', help: "Prefix tokens served from the prefix KV cache or an identical group of the call instead of being computed, per engine group: a question of more than 26 options reads its state in a group of its own, so its state's reuse counts again here while usage.cached_tokens counts a request's state once." },
  { name: 'suffixTokens', unit: 'tokens', help: 'Question suffix tokens run through the model.' },
  { name: 'forwardPasses', unit: 'passes', help: 'Forward passes run by the engine (prefix and suffix passes).' },
  { name: 'prefixPasses', unit: 'passes', help: 'Prefix forward passes.' },
  { name: 'suffixPasses', unit: 'passes', help: 'Suffix forward passes.' },
  { name: 'paddedTokens', unit: 'tokens', help: 'Padding tokens the forward passes computed: rows of unequal length padded to the longest, passes padded to a fixed shape, the gap between states and questions in a split pass.' },
  { name: 'prefixCacheEvictions', unit: 'prefixes', help: 'Prefixes the prefix KV cache evicted to stay within its byte bound.' },
  {
    name: 'pastTokensCopied', unit: 'tokens',
    help: "Prefix KV positions copied into the forward passes' batch tensors, per row: forked rows copy a state's KV once per question, packed rows none for a state the call computes and once per further row.",
  },
  {
    name: 'passBufferMoves', unit: 'moves',
    help: 'Times a buffer that forward passes reuse (staged inputs, batch past; with shape buckets the outputs too) had to be reallocated to grow. With CUDA graphs each move retires the graphs captured before it; steady traffic makes none.',
  },
  {
    name: 'deviceCopies', unit: 'copies',
    help: "Calls into the provider's copy or fill API (a batch of copies issued as one call counts once): KV forks and copies are one batch per forward pass, the inputs one copy.",
  },
  { name: 'hostToDeviceBytes', unit: 'bytes', help: "Bytes sent from the host to the device (the passes' staged inputs)." },
  { name: 'deviceToHostBytes', unit: 'bytes', help: 'Bytes read back from the device (label logits and log-sum-exps).' },
  { name: 'runMillis', unit: 'milliseconds', help: 'Time inside ONNX Runtime session runs.' },
  { name: 'hostMillis', unit: 'milliseconds', help: 'Time of the calls outside session runs (batching, copies queued, results read).' },
] as const satisfies readonly EngineCounterSpec[];

/** The engine's state now, read beside the counters (engine.counters()), never summed over calls. */
export const ENGINE_GAUGES = [
  { name: 'prefixCacheBytes', unit: 'bytes', help: 'Bytes held by the prefix KV cache.' },
  { name: 'prefixCacheEntries', unit: 'prefixes', help: 'Prefixes held by the prefix KV cache.' },
  { name: 'callsInProgress', unit: 'calls', help: 'Score calls computing right now (0 or 1: one call at a time per engine).' },
] as const satisfies readonly EngineCounterSpec[];

export type EngineCounterName = (typeof ENGINE_COUNTERS)[number]['name'];
export type EngineGaugeName = (typeof ENGINE_GAUGES)[number]['name'];

/** One number per counter. */
export type CounterValues = Record<EngineCounterName, number>;

/** Every counter at 0: the start of a sum. */
export function zeroCounters(): CounterValues {
  return Object.fromEntries(ENGINE_COUNTERS.map((c) => [c.name, 0])) as CounterValues;
}

/** Adds `c` into `into`, counter by counter. */
export function addCounters(into: CounterValues, c: CounterValues): void {
  for (const { name } of ENGINE_COUNTERS) into[name] += c[name];
}
