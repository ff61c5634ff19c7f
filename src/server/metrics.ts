/**
 * Prometheus metrics at GET /metrics (text exposition format 0.0.4), unauthenticated.
 *
 * HTTP: requests by method, route pattern and status; a latency histogram by method and route.
 * The route label is the route's pattern (`/v1/batches/:id`), or `unmatched` for unknown paths, so
 * clients cannot grow the label set. Engine: the cumulative counters of every loaded model (forward
 * passes, prefix tokens computed and reused, suffix tokens, ...) and its queue depths, read from
 * DecisionService.metrics() at scrape time. None of it waits for a running engine call (the engine
 * reads its counters without the compute lock), so a scrape answers at once during a long call.
 *
 * Written by hand rather than with prom-client: a dozen series, no dependency.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import type { DecisionService } from '../service/decision-service.js';

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Label values escaped as the exposition format requires. */
function esc(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function labels(l: Record<string, string>): string {
  const parts = Object.entries(l).map(([k, v]) => `${k}="${esc(v)}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

function num(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

interface Histogram {
  labels: Record<string, string>;
  counts: number[];
  sum: number;
  count: number;
}

export class HttpMetrics {
  private readonly requests = new Map<string, { labels: Record<string, string>; value: number }>();
  private readonly latency = new Map<string, Histogram>();
  readonly startedAt = Date.now();

  observe(method: string, route: string, status: number, seconds: number): void {
    const reqLabels = { method, route, status: String(status) };
    const rk = JSON.stringify(reqLabels);
    const r = this.requests.get(rk);
    if (r) r.value++;
    else this.requests.set(rk, { labels: reqLabels, value: 1 });

    const latLabels = { method, route };
    const lk = JSON.stringify(latLabels);
    let h = this.latency.get(lk);
    if (!h) {
      h = { labels: latLabels, counts: LATENCY_BUCKETS.map(() => 0), sum: 0, count: 0 };
      this.latency.set(lk, h);
    }
    for (let i = 0; i < LATENCY_BUCKETS.length; i++) if (seconds <= LATENCY_BUCKETS[i]!) h.counts[i]!++;
    h.sum += seconds;
    h.count++;
  }

  render(out: string[]): void {
    out.push('# HELP decide_http_requests_total HTTP requests answered, by method, route pattern and status.');
    out.push('# TYPE decide_http_requests_total counter');
    for (const r of this.requests.values()) out.push(`decide_http_requests_total${labels(r.labels)} ${r.value}`);

    out.push('# HELP decide_http_request_duration_seconds Time from receiving a request to sending its response.');
    out.push('# TYPE decide_http_request_duration_seconds histogram');
    for (const h of this.latency.values()) {
      LATENCY_BUCKETS.forEach((le, i) => {
        out.push(`decide_http_request_duration_seconds_bucket${labels({ ...h.labels, le: num(le) })} ${h.counts[i]}`);
      });
      out.push(`decide_http_request_duration_seconds_bucket${labels({ ...h.labels, le: '+Inf' })} ${h.count}`);
      out.push(`decide_http_request_duration_seconds_sum${labels(h.labels)} ${num(h.sum)}`);
      out.push(`decide_http_request_duration_seconds_count${labels(h.labels)} ${h.count}`);
    }
  }
}

/** Engine series: name, help, type, and how to read the value from one model's metrics. */
type ModelMetrics = Awaited<ReturnType<DecisionService['metrics']>>['models'][number];
const ENGINE_SERIES: Array<{ name: string; help: string; type: 'counter' | 'gauge'; value: (m: ModelMetrics) => number }> = [
  { name: 'decide_engine_forward_passes_total', help: 'Forward passes run by the engine (prefix and suffix passes).', type: 'counter', value: (m) => m.counters.forwardPasses },
  { name: 'decide_engine_prefix_passes_total', help: 'Prefix forward passes.', type: 'counter', value: (m) => m.counters.prefixPasses },
  { name: 'decide_engine_suffix_passes_total', help: 'Suffix forward passes.', type: 'counter', value: (m) => m.counters.suffixPasses },
  { name: 'decide_engine_calls_total', help: 'Score calls into the native engine (each one coalesced batch).', type: 'counter', value: (m) => m.counters.calls },
  { name: 'decide_engine_prefix_tokens_computed_total', help: 'Prefix tokens run through the model.', type: 'counter', value: (m) => m.counters.prefixTokensComputed },
  { name: 'decide_engine_cached_tokens_total', help: 'Prefix tokens served from the prefix KV cache instead of being computed (the sum of usage.cached_tokens).', type: 'counter', value: (m) => m.counters.cachedTokens },
  { name: 'decide_engine_suffix_tokens_total', help: 'Question suffix tokens run through the model.', type: 'counter', value: (m) => m.counters.suffixTokens },
  { name: 'decide_engine_padded_tokens_total', help: 'Padding tokens added to batch rows of unequal length.', type: 'counter', value: (m) => m.counters.paddedTokens },
  { name: 'decide_engine_past_tokens_copied_total', help: 'Prefix KV positions copied into forward passes: per question when rows are forked, per packed row after a cached state.', type: 'counter', value: (m) => m.counters.pastTokensCopied },
  { name: 'decide_engine_device_copies_total', help: "Calls into the provider's copy or fill API (a batch of copies issued as one call counts once): KV forks and copies are one batch per forward pass.", type: 'counter', value: (m) => m.counters.deviceCopies },
  { name: 'decide_engine_host_to_device_bytes_total', help: 'Bytes sent from the host to the device (the passes\' staged inputs).', type: 'counter', value: (m) => m.counters.hostToDeviceBytes },
  { name: 'decide_engine_device_to_host_bytes_total', help: 'Bytes read back from the device (label logits and log-sum-exps).', type: 'counter', value: (m) => m.counters.deviceToHostBytes },
  { name: 'decide_engine_run_seconds_total', help: 'Seconds inside ONNX Runtime session runs.', type: 'counter', value: (m) => m.counters.runMillis / 1000 },
  { name: 'decide_engine_host_seconds_total', help: 'Seconds of engine calls outside session runs (batching, copies queued, results read).', type: 'counter', value: (m) => m.counters.hostMillis / 1000 },
  { name: 'decide_engine_prefix_cache_bytes', help: 'Bytes held by the prefix KV cache.', type: 'gauge', value: (m) => m.counters.prefixCacheBytes },
  { name: 'decide_engine_prefix_cache_entries', help: 'Prefixes held by the prefix KV cache.', type: 'gauge', value: (m) => m.counters.prefixCacheEntries },
  { name: 'decide_engine_calls_in_progress', help: 'Score calls computing right now (0 or 1: one call at a time per model).', type: 'gauge', value: (m) => m.counters.callsInProgress },
  { name: 'decide_engine_prefix_cache_evictions_total', help: 'Prefixes the prefix KV cache evicted to stay within its byte bound.', type: 'counter', value: (m) => m.counters.prefixCacheEvictions },
  { name: 'decide_scheduler_calls_total', help: 'Engine calls made by the scheduler.', type: 'counter', value: (m) => m.calls },
];

export async function renderMetrics(http: HttpMetrics, service: DecisionService): Promise<string> {
  const out: string[] = [];
  http.render(out);
  const { models } = await service.metrics();
  for (const s of ENGINE_SERIES) {
    out.push(`# HELP ${s.name} ${s.help}`);
    out.push(`# TYPE ${s.name} ${s.type}`);
    for (const m of models) out.push(`${s.name}${labels({ model: m.id })} ${num(s.value(m))}`);
  }
  out.push('# HELP decide_engine_queue_depth Jobs waiting in the scheduler, by queue (live requests, batch work).');
  out.push('# TYPE decide_engine_queue_depth gauge');
  for (const m of models) {
    out.push(`decide_engine_queue_depth${labels({ model: m.id, queue: 'live' })} ${m.queue.live}`);
    out.push(`decide_engine_queue_depth${labels({ model: m.id, queue: 'batch' })} ${m.queue.batch}`);
  }
  out.push('# HELP decide_models_loaded Models loaded in this process.');
  out.push('# TYPE decide_models_loaded gauge');
  out.push(`decide_models_loaded ${models.length}`);
  const mem = process.memoryUsage();
  out.push('# HELP process_resident_memory_bytes Resident memory size in bytes.');
  out.push('# TYPE process_resident_memory_bytes gauge');
  out.push(`process_resident_memory_bytes ${mem.rss}`);
  out.push('# HELP process_start_time_seconds Start time of the process since the Unix epoch in seconds.');
  out.push('# TYPE process_start_time_seconds gauge');
  out.push(`process_start_time_seconds ${Math.floor((Date.now() - process.uptime() * 1000) / 1000)}`);
  return `${out.join('\n')}\n`;
}

/** Counts every response (hook on the root-level app) and serves GET /metrics. */
export function registerMetrics(app: FastifyInstance, service: DecisionService): HttpMetrics {
  const http = new HttpMetrics();
  app.addHook('onResponse', async (request: FastifyRequest, reply: FastifyReply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    http.observe(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
  });
  app.get(
    '/metrics',
    { config: { public: true }, schema: { hide: true } },
    async (_request, reply) => {
      reply.type('text/plain; version=0.0.4; charset=utf-8');
      return renderMetrics(http, service);
    },
  );
  return http;
}
