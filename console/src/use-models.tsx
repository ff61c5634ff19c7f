import { useEffect, useState } from 'preact/hooks';

import { getJson } from './api.js';
import { ApiProblem } from './problems.js';
import type { ModelListing } from './types.js';

/** After a failed listing, the wait before asking again (a 429's Retry-After when longer). */
const RETRY_MS = 5000;

/** GET /v1/models, with the error when it fails (then asked again until it answers); `reload` asks again. */
export function useModels(): { listing?: ModelListing; error?: unknown; reload: () => void } {
  const [listing, setListing] = useState<ModelListing>();
  const [error, setError] = useState<unknown>();
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    let retry: number | undefined;
    getJson<ModelListing>('/v1/models').then(
      (l) => live && (setListing(l), setError(undefined)),
      (e: unknown) => {
        if (!live) return;
        setError(e);
        const wait = Math.max(RETRY_MS, e instanceof ApiProblem && e.retryAfterSeconds ? e.retryAfterSeconds * 1000 : 0);
        retry = window.setTimeout(() => setTick((t) => t + 1), wait);
      },
    );
    return () => {
      live = false;
      clearTimeout(retry);
    };
  }, [tick]);
  return { listing, error, reload: () => setTick((t) => t + 1) };
}

/**
 * The ids a request may name: aliases first (they follow new versions), then working dated ids.
 * An alias whose version is already loaded comes first: it is the default, and it answers at once.
 */
export function modelChoices(listing: ModelListing | undefined): Array<{ value: string; label: string }> {
  if (!listing) return [];
  const loaded = new Set(listing.data.filter((m) => m.loaded).map((m) => m.id));
  const aliases = Object.entries(listing.aliases)
    .sort(([, a], [, b]) => Number(loaded.has(b)) - Number(loaded.has(a)))
    .map(([alias, id]) => ({ value: alias, label: `${alias} (now ${id})` }));
  const ids = listing.data.filter((m) => m.status === 'ok').map((m) => ({ value: m.id, label: m.id }));
  return [...aliases, ...ids];
}

export function ModelSelect({ listing, value, onChange, id }: { listing?: ModelListing; value: string; onChange: (v: string) => void; id: string }) {
  const choices = modelChoices(listing);
  return (
    <select id={id} value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value)}>
      {choices.length === 0 ? <option value="">(no models)</option> : null}
      {choices.map((c) => (
        <option key={c.value} value={c.value}>
          {c.label}
        </option>
      ))}
    </select>
  );
}
