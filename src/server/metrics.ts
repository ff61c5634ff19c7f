/**
 * Prometheus metrics at GET /metrics (text exposition format 0.0.4), unauthenticated.
 *
 * HTTP: requests by method, route pattern and status (499: the client left before its answer); a
 * latency histogram by method and route (answered requests).
 * The route label is the route's pattern (`/v1/batches/:id`), or `unmatched` for unknown paths, so
 * clients cannot grow the label set. Engine: the cumulative counters of every loaded model (forward
 * passes, prefix tokens computed and reused, suffix tokens, ...) and its queue depths, read from
 * DecisionService.metrics() at scrape time. None of it waits for a running engine call (the engine
 * reads its counters without the compute lock), so a scrape answers at once during a long call.
 * The reader threads (body-thread.ts, batches/record-thread.ts): large request bodies and batch
 * lines read there, and those in progress. The batch store: its calls that met a database outage.
 *
 * The engine series derive from the counter table (src/engine/engine-counters.ts): a counter added
 * there is exported here with no edit. Written by hand rather than with prom-client: a few dozen
 * series, no dependency.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { ENGINE_COUNTERS, ENGINE_GAUGES, type EngineCounterSpec } from '../engine/engine-counters.js';
import { storeOutageStats } from '../batches/store-outages.js';
import { recordThreadStats } from '../batches/record-thread.js';
import type { DecisionService } from '../service/decision-service.js';
import type { BodyThread } from './body-thread.js';
import { CLIENT_CLOSED_STATUS } from './request-log.js';

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
    this.count(method, route, status);

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

  /**
   * Counts a request whose client closed its connection before the answer (app.ts): no response,
   * so no onResponse and no latency to time; under status 499.
   */
  countAbandoned(request: FastifyRequest): void {
    this.count(request.method, request.routeOptions.url ?? 'unmatched', CLIENT_CLOSED_STATUS);
  }

  private count(method: string, route: string, status: number): void {
    const reqLabels = { method, route, status: String(status) };
    const rk = JSON.stringify(reqLabels);
    const r = this.requests.get(rk);
    if (r) r.value++;
    else this.requests.set(rk, { labels: reqLabels, value: 1 });
  }

  render(out: string[]): void {
    out.push('# HELP decide_http_requests_total HTTP requests by method, route pattern and status (499: the client left before its answer).');
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
interface EngineSeries {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  value: (m: ModelMetrics) => number;
}

const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * The series of one engine counter or gauge: `decide_engine_<name in snake case>`, `_total` for a
 * counter; milliseconds are exported in seconds, as Prometheus's base unit (runMillis:
 * decide_engine_run_seconds_total).
 */
export function engineSeries(spec: EngineCounterSpec, type: 'counter' | 'gauge'): EngineSeries {
  const inSeconds = spec.unit === 'milliseconds';
  const base = snake(inSeconds ? spec.name.replace(/Millis$/, 'Seconds') : spec.name);
  const help = inSeconds ? spec.help.replace(/^Time/, 'Seconds') : spec.help;
  const key = spec.name as keyof ModelMetrics['counters'];
  return {
    name: `decide_engine_${base}${type === 'counter' ? '_total' : ''}`,
    help,
    type,
    value: inSeconds ? (m) => m.counters[key] / 1000 : (m) => m.counters[key],
  };
}

const ENGINE_SERIES: EngineSeries[] = [
  ...ENGINE_COUNTERS.map((c) => engineSeries(c, 'counter')),
  ...ENGINE_GAUGES.map((g) => engineSeries(g, 'gauge')),
  { name: 'decide_scheduler_calls_total', help: 'Engine calls made by the scheduler.', type: 'counter', value: (m) => m.calls },
];

/** One unlabelled series with its HELP and TYPE lines. */
function single(out: string[], name: string, type: 'counter' | 'gauge', help: string, value: number): void {
  out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${num(value)}`);
}

/** The reader threads' series: request bodies and batch lines read there, and those waiting or being read now. */
function renderReaderThreads(bodies: Pick<BodyThread, 'bodiesRead' | 'inProgress'>, out: string[]): void {
  const lines = recordThreadStats();
  single(out, 'decide_request_bodies_off_thread_total', 'counter', 'Large decision request bodies read (JSON and validation) in the body reader thread.', bodies.bodiesRead);
  single(out, 'decide_request_bodies_off_thread_in_progress', 'gauge', 'Large decision request bodies waiting for or being read in the body reader thread.', bodies.inProgress);
  single(out, 'decide_batch_lines_off_thread_total', 'counter', 'Large batch lines read (JSON and validation) in the record reader thread.', lines.linesRead);
  single(out, 'decide_batch_lines_off_thread_in_progress', 'gauge', 'Large batch lines waiting for or being read in the record reader thread.', lines.inProgress);
}

export async function renderMetrics(http: HttpMetrics, service: DecisionService, bodies: BodyThread): Promise<string> {
  const out: string[] = [];
  http.render(out);
  renderReaderThreads(bodies, out);
  single(out, 'decide_batch_store_unavailable_total', 'counter', 'Batch store calls that failed because its database was not answering (Postgres down, restarting or unreachable) or its disk refused a write (full, read-only).', storeOutageStats.unavailable);
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
  out.push('# HELP decide_tokenizer_queue_depth Texts waiting for the model\'s tokenizer thread or being tokenized, by queue (live requests, batch records).');
  out.push('# TYPE decide_tokenizer_queue_depth gauge');
  for (const m of models) {
    out.push(`decide_tokenizer_queue_depth${labels({ model: m.id, queue: 'live' })} ${m.tokenizerQueue.live}`);
    out.push(`decide_tokenizer_queue_depth${labels({ model: m.id, queue: 'batch' })} ${m.tokenizerQueue.batch}`);
  }
  single(out, 'decide_models_loaded', 'gauge', 'Models loaded in this process.', models.length);
  single(out, 'process_resident_memory_bytes', 'gauge', 'Resident memory size in bytes.', process.memoryUsage().rss);
  single(out, 'process_start_time_seconds', 'gauge', 'Start time of the process since the Unix epoch in seconds.', Math.floor((Date.now() - process.uptime() * 1000) / 1000));
  return `${out.join('\n')}\n`;
}

/** The counters of each HTTP server, for the answers no route's hooks see (countUnrouted). */
const metricsOfServer = new WeakMap<object, HttpMetrics>();

/**
 * Counts an answer given before routing (fastify's frameworkErrors: a malformed URL), which runs
 * no onResponse hook, under route `unmatched` once it is sent.
 */
export function countUnrouted(request: FastifyRequest, reply: FastifyReply): void {
  const http = metricsOfServer.get(request.server.server);
  if (!http) return;
  reply.raw.once('finish', () => http.observe(request.method, 'unmatched', reply.statusCode, reply.elapsedTime / 1000));
}

/** Counts every response of the API's level (app.ts) and serves GET /metrics. */
export function registerMetrics(app: FastifyInstance, service: DecisionService, bodies: BodyThread): HttpMetrics {
  const http = new HttpMetrics();
  metricsOfServer.set(app.server, http);
  app.addHook('onResponse', async (request: FastifyRequest, reply: FastifyReply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    http.observe(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
  });
  app.get(
    '/metrics',
    { config: { public: true }, schema: { hide: true } },
    async (_request, reply) => {
      reply.type('text/plain; version=0.0.4; charset=utf-8');
      return renderMetrics(http, service, bodies);
    },
  );
  return http;
}
