import { useEffect, useRef, useState } from 'preact/hooks';

import { ApiProblem, call } from '../api.js';
import { Problem } from '../components/problem.js';
import { healthFigures, parseMetrics, perSecond, type HealthFigures, type Sample } from '../metrics-text.js';

const REFRESH_MS = 2000;

interface Reading {
  at: number;
  ready: { ok: true; models: string[] } | { ok: false; reason: string };
  samples: Sample[];
  figures: HealthFigures;
}

async function read(): Promise<Reading> {
  // Both probes are public: no key is sent.
  let ready: Reading['ready'];
  try {
    const body = (await (await call('/readyz', { anonymous: true })).json()) as { models: string[] };
    ready = { ok: true, models: body.models };
  } catch (err) {
    if (!(err instanceof ApiProblem) || err.status !== 503) throw err;
    ready = { ok: false, reason: err.message };
  }
  const samples = parseMetrics(await (await call('/metrics', { anonymous: true })).text());
  return { at: Date.now(), ready, samples, figures: healthFigures(samples) };
}

const mib = (b: number) => `${(b / 1024 / 1024).toFixed(1)} MiB`;

export function Health() {
  const [reading, setReading] = useState<Reading>();
  const [rate, setRate] = useState<number | null>(null);
  const [error, setError] = useState<unknown>();
  const previous = useRef<Reading | undefined>(undefined);

  useEffect(() => {
    let live = true;
    let timer: number | undefined;
    const tick = async () => {
      try {
        const next = await read();
        if (!live) return;
        const before = previous.current;
        if (before) setRate(perSecond({ at: before.at, value: before.figures.decisionsAnswered }, { at: next.at, value: next.figures.decisionsAnswered }));
        previous.current = next;
        setReading(next);
        setError(undefined);
      } catch (err) {
        if (live) setError(err);
      }
      if (live) timer = window.setTimeout(tick, REFRESH_MS);
    };
    void tick();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, []);

  if (!reading) return <div class="page">{error ? <Problem error={error} /> : <p class="hint">Reading /readyz and /metrics…</p>}</div>;
  const f = reading.figures;
  const engineRows = reading.samples.filter((s) => s.name.startsWith('decide_engine_') || s.name === 'decide_models_loaded');
  return (
    <div class="page health">
      <Problem error={error} />
      <section class="panel">
        <div class="row">
          {error ? (
            // The last reading failed: what is below is from before, not the server's state now.
            <h2 data-ready="unknown" class="warn">
              Unknown
            </h2>
          ) : (
            <h2 data-ready={reading.ready.ok ? 'ready' : 'not-ready'} class={reading.ready.ok ? 'good' : 'warn'}>
              {reading.ready.ok ? 'Ready' : 'Not ready'}
            </h2>
          )}
          <span class="hint">
            {error
              ? `the figures below are the last reading, from ${new Date(reading.at).toLocaleTimeString()}`
              : `${reading.ready.ok ? `models loaded: ${reading.ready.models.join(', ') || 'none'}` : reading.ready.reason} · refreshed ${new Date(reading.at).toLocaleTimeString()}`}
          </span>
        </div>
        <dl class="facts big">
          <div>
            <dt>decisions per second</dt>
            <dd data-figure="rate">{rate === null ? '…' : rate.toFixed(2)}</dd>
          </div>
          <div>
            <dt>engine queue (live / batch)</dt>
            <dd data-figure="queue">
              {f.queueLive} / {f.queueBatch}
            </dd>
          </div>
          <div>
            <dt>prefix-cache hit rate</dt>
            <dd data-figure="hit-rate">{f.prefixHitRate === null ? '–' : `${(f.prefixHitRate * 100).toFixed(1)}%`}</dd>
          </div>
          <div>
            <dt>decisions answered</dt>
            <dd data-figure="answered">{f.decisionsAnswered}</dd>
          </div>
          <div>
            <dt>prefix cache</dt>
            <dd class="small">
              {f.cacheEntries} entries, {mib(f.cacheBytes)}
            </dd>
          </div>
          <div>
            <dt>engine calls running</dt>
            <dd>{f.callsInProgress}</dd>
          </div>
          <div>
            <dt>resident memory</dt>
            <dd>{mib(f.residentBytes)}</dd>
          </div>
        </dl>
      </section>
      <section class="panel">
        <h3>Engine series from /metrics</h3>
        <div class="scroll"><table class="metrics">
          <thead>
            <tr>
              <th scope="col">series</th>
              <th scope="col">labels</th>
              <th scope="col">value</th>
            </tr>
          </thead>
          <tbody>
            {engineRows.map((s, i) => (
              <tr key={i}>
                <td>
                  <code>{s.name}</code>
                </td>
                <td>{Object.entries(s.labels).map(([k, v]) => `${k}=${v}`).join(', ')}</td>
                <td>{s.value}</td>
              </tr>
            ))}
          </tbody>
        </table></div>
      </section>
    </div>
  );
}
