import { useState } from 'preact/hooks';

import { Problem } from '../components/problem.js';
import { ReliabilityDiagram } from '../components/reliability.js';
import type { HeldOut, Model } from '../types.js';
import { useModels } from '../use-models.js';

const f3 = (v: number | undefined) => (v === undefined ? '–' : v.toFixed(3));

function Figures({ model }: { model: Model }) {
  const [open, setOpen] = useState<string>();
  const types = Object.entries(model.held_out ?? {}) as Array<[string, HeldOut]>;
  if (types.length === 0) return model.calibrated ? <p class="hint">Calibrated by hand (no held-out figures recorded).</p> : null;
  return (
    <div class="figures">
      <table>
        <caption>Held-out figures of the fit{model.calibrated_from ? ` from ${model.calibrated_from}` : ''}</caption>
        <thead>
          <tr>
            <th scope="col">type</th>
            <th scope="col">ECE before</th>
            <th scope="col">ECE after</th>
            <th scope="col">log-loss before</th>
            <th scope="col">log-loss after</th>
            <th scope="col">uniform log-loss</th>
            <th scope="col">kept</th>
            <th scope="col">diagram</th>
          </tr>
        </thead>
        <tbody>
          {types.map(([type, h]) => (
            <tr key={type} data-type={type}>
              <th scope="row">{type}</th>
              <td data-ece-before>{f3(h.ece_before)}</td>
              <td data-ece-after>{f3(h.ece)}</td>
              <td>{f3(h.nll_before)}</td>
              <td>{f3(h.nll)}</td>
              <td>{f3(h.uniform_nll)}</td>
              <td>
                {h.kept ?? '–'}
                {h.poor_fit ? <span class="warn"> poor fit: {h.poor_fit.join('; ')}</span> : null}
              </td>
              <td>
                {h.reliability ? (
                  <button type="button" aria-expanded={open === type} data-diagram-button={`${model.id}:${type}`} onClick={() => setOpen(open === type ? undefined : type)}>
                    {open === type ? 'Hide' : 'Show'}
                  </button>
                ) : (
                  'not recorded'
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {open && model.held_out?.[open]?.reliability ? <ReliabilityDiagram type={open} figures={model.held_out[open]!} /> : null}
    </div>
  );
}

function Version({ model, current }: { model: Model; current: boolean }) {
  return (
    <li class={`version ${model.status}`} data-model-id={model.id}>
      <div class="row">
        <strong>{model.id}</strong>
        {current ? <span class="badge">alias points here</span> : null}
        <span class="badge">{model.loaded ? 'loaded' : 'not loaded'}</span>
        <span class={model.calibrated ? 'badge good' : 'badge'}>{model.calibrated ? 'calibrated' : 'uncalibrated'}</span>
        {model.calibrated_at ? <span class="hint">fitted {new Date(model.calibrated_at).toLocaleString()}</span> : null}
      </div>
      {model.status === 'broken' ? (
        <p class="problem" data-broken>
          Broken: {model.error}
        </p>
      ) : null}
      <Figures model={model} />
    </li>
  );
}

export function Models() {
  const { listing, error, reload } = useModels();
  if (!listing) return <div class="page">{error ? <Problem error={error} /> : <p class="hint">Loading models…</p>}</div>;
  const groups = new Map<string, Model[]>();
  for (const m of listing.data) groups.set(m.alias ?? m.id, [...(groups.get(m.alias ?? m.id) ?? []), m]);
  return (
    <div class="page models">
      <div class="row">
        <h2>Models</h2>
        <button type="button" class="quiet" onClick={reload}>
          Refresh
        </button>
      </div>
      <Problem error={error} />
      {[...groups].map(([name, versions]) => (
        <section class="panel" key={name} data-alias={name}>
          <h3>
            {name}
            {listing.aliases[name] ? <span class="hint"> → {listing.aliases[name]}</span> : null}
          </h3>
          <ul class="versions">
            {[...versions].reverse().map((m) => (
              <Version key={m.id} model={m} current={listing.aliases[name] === m.id} />
            ))}
          </ul>
        </section>
      ))}
      {listing.incomplete && listing.incomplete.length > 0 ? (
        <section class="panel" aria-label="incomplete model directories">
          <h3>Skipped directories</h3>
          <ul>
            {listing.incomplete.map((d) => (
              <li key={d.id} data-incomplete={d.id}>
                <strong>{d.id}</strong>: {d.reason}
              </li>
            ))}
          </ul>
        </section>
      ) : null}
    </div>
  );
}
