// Reading GET /metrics (Prometheus text format) into the numbers the Health page shows. The
// page's figures are the exported series themselves; rates come from two readings.
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

export function sum(samples: Sample[], name: string, where: (labels: Record<string, string>) => boolean = () => true): number {
  return samples.filter((s) => s.name === name && where(s.labels)).reduce((n, s) => n + s.value, 0);
}

/** The routes that answer decisions, in every dialect. */
const DECISION_ROUTES = new Set(['/v1/decide', '/v1/systemone', '/v1/decisions']);

export interface HealthFigures {
  decisionsAnswered: number;
  queueLive: number;
  queueBatch: number;
  cachedTokens: number;
  computedPrefixTokens: number;
  /** Share of prefix tokens served from the prefix cache; null before any prefix was seen. */
  prefixHitRate: number | null;
  cacheEntries: number;
  cacheBytes: number;
  callsInProgress: number;
  modelsLoaded: number;
  residentBytes: number;
}

export function healthFigures(samples: Sample[]): HealthFigures {
  const cachedTokens = sum(samples, 'decide_engine_cached_tokens_total');
  const computedPrefixTokens = sum(samples, 'decide_engine_prefix_tokens_computed_total');
  const seen = cachedTokens + computedPrefixTokens;
  return {
    decisionsAnswered: sum(samples, 'decide_http_requests_total', (l) => DECISION_ROUTES.has(l.route ?? '') && l.status === '200'),
    queueLive: sum(samples, 'decide_engine_queue_depth', (l) => l.queue === 'live'),
    queueBatch: sum(samples, 'decide_engine_queue_depth', (l) => l.queue === 'batch'),
    cachedTokens,
    computedPrefixTokens,
    prefixHitRate: seen > 0 ? cachedTokens / seen : null,
    cacheEntries: sum(samples, 'decide_engine_prefix_cache_entries'),
    cacheBytes: sum(samples, 'decide_engine_prefix_cache_bytes'),
    callsInProgress: sum(samples, 'decide_engine_calls_in_progress'),
    modelsLoaded: sum(samples, 'decide_models_loaded'),
    residentBytes: sum(samples, 'process_resident_memory_bytes'),
  };
}

/** A counter's value at a moment (Date.now() milliseconds). */
export interface CounterReading {
  at: number;
  value: number;
}

/**
 * How fast a counter grew between two readings, per second; null when no time passed. A counter
 * that went down was reset (the server restarted): it counted from 0 since, so its value now is the
 * increase, as Prometheus' rate() reads a reset. Never negative.
 */
export function perSecond(before: CounterReading, after: CounterReading): number | null {
  const seconds = (after.at - before.at) / 1000;
  if (!(seconds > 0)) return null;
  const increase = after.value >= before.value ? after.value - before.value : after.value;
  return increase / seconds;
}
