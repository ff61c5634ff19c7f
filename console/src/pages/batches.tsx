import { useEffect, useRef, useState } from 'preact/hooks';

import { call, getJson } from '../api.js';
import { asBatch } from '../batch-wire.js';
import { LineProblems, type LineProblem } from '../components/line-problems.js';
import { rowFailure } from '../result-rows.js';
import { Problem } from '../components/problem.js';
import { BatchProgress } from '../components/progress.js';
import type { Batch, BatchValidation } from '../types.js';
import { modelChoices, ModelSelect, useModels } from '../use-models.js';

const FINAL = new Set(['completed', 'failed', 'cancelled', 'expired']);
const HAS_RESULTS = new Set(['completed', 'failed', 'cancelled']);
/** Polling while a job moves, and while none does (a job may come from another client). */
const LIVE_POLL_MS = 1000;
const IDLE_POLL_MS = 5000;
/** Batches per page of GET /v1/batches (its limit is at most 100); "Show older" adds a page. */
const PAGE_SIZE = 50;

type ListedBatch = Parameters<typeof asBatch>[0];

/** The newest `pages` pages of the key's batches, following the list's `after` cursor, and whether older ones exist. */
async function loadPages(pages: number): Promise<{ batches: ListedBatch[]; hasMore: boolean }> {
  const batches: ListedBatch[] = [];
  let after: string | undefined;
  for (let p = 0; p < pages; p++) {
    const query = `limit=${PAGE_SIZE}${after === undefined ? '' : `&after=${encodeURIComponent(after)}`}`;
    const list = await getJson<{ data: ListedBatch[]; has_more: boolean }>(`/v1/batches?${query}`);
    batches.push(...list.data);
    if (!list.has_more || list.data.length === 0) return { batches, hasMore: false };
    after = list.data[list.data.length - 1]!.id;
  }
  return { batches, hasMore: true };
}

function throughput(b: Batch, now: number): string {
  const done = b.progress.completed + b.progress.failed;
  const end = b.completed_at ? Date.parse(b.completed_at) : now;
  const seconds = (end - Date.parse(b.created_at)) / 1000;
  return done > 0 && seconds > 0 ? `${(done / seconds).toFixed(1)} rows/s` : '–';
}

async function download(batch: Batch): Promise<void> {
  const blob = await (await call(`/v1/batches/${batch.id}/results`)).blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = `${batch.id}.results.jsonl`;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** The job's failed rows, numbered by their row of the results (1-based), in either dialect (result-rows.ts). */
async function failedRows(batch: Batch): Promise<LineProblem[]> {
  const text = await (await call(`/v1/batches/${batch.id}/results`)).text();
  const rows: LineProblem[] = [];
  text.split('\n').forEach((line, index) => {
    if (!line) return;
    const row = JSON.parse(line) as { custom_id?: string | null };
    const failure = rowFailure(row);
    if (failure) rows.push({ at: index + 1, custom_id: row.custom_id, code: failure.code, message: failure.message });
  });
  return rows;
}

function BatchRow({ batch, now, onChanged }: { batch: ReturnType<typeof asBatch>; now: number; onChanged: () => void }) {
  const [error, setError] = useState<unknown>();
  const [failed, setFailed] = useState<LineProblem[]>();
  const act = (fn: () => Promise<unknown>) => async () => {
    setError(undefined);
    try {
      await fn();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <li class="batch" data-batch-id={batch.id} data-status={batch.status}>
      <div class="row">
        <code>{batch.id}</code>
        <span class={`badge status-${batch.status}`} data-status-badge>
          {batch.status.replace('_', ' ')}
        </span>
        <span class="hint">{batch.model}</span>
        {batch.dialect === 'openai' ? <span class="badge">OpenAI Batch API</span> : null}
        <span class="hint">created {new Date(batch.created_at).toLocaleString()}</span>
        <span class="hint" data-throughput>
          {throughput(batch, now)}
        </span>
      </div>
      <BatchProgress batch={batch} />
      {batch.error ? <p class="problem">Failed: {batch.error.message}</p> : null}
      <div class="row">
        {!FINAL.has(batch.status) && batch.status !== 'cancelling' ? (
          <button type="button" data-action="cancel" onClick={act(async () => (await call(`/v1/batches/${batch.id}/cancel`, { method: 'POST' }), onChanged()))}>
            Cancel
          </button>
        ) : null}
        {HAS_RESULTS.has(batch.status) ? (
          <button type="button" data-action="download" onClick={act(() => download(batch))}>
            Download results
          </button>
        ) : null}
        {HAS_RESULTS.has(batch.status) && batch.progress.failed > 0 ? (
          <button type="button" data-action="failed" aria-expanded={failed !== undefined} onClick={act(async () => setFailed(failed ? undefined : await failedRows(batch)))}>
            {failed ? 'Hide failed rows' : `Failed rows (${batch.progress.failed})`}
          </button>
        ) : null}
      </div>
      <Problem error={error} />
      {failed ? (
        <LineProblems
          problems={failed}
          atLabel="row"
          problemLabel="error"
          tableClass="failed-rows"
          rowAttribute={(p) => ({ 'data-failed-row': p.custom_id ?? '' })}
        />
      ) : null}
    </li>
  );
}

function CreateBatch({ onCreated }: { onCreated: () => void }) {
  const { listing, error: modelsError } = useModels();
  const [model, setModel] = useState('');
  const [questions, setQuestions] = useState('');
  const [file, setFile] = useState<File>();
  const [checking, setChecking] = useState(false);
  const [validation, setValidation] = useState<BatchValidation>();
  const [error, setError] = useState<unknown>();
  const [dragging, setDragging] = useState(false);
  const [created, setCreated] = useState('');
  // One press, one job: a second press (double-click, Enter twice) while the POST is out is ignored.
  const [creating, setCreating] = useState(false);
  const creatingNow = useRef(false);

  useEffect(() => {
    if (!model && listing) setModel(modelChoices(listing)[0]?.value ?? '');
  }, [listing]);

  const form = (f: File) => {
    const data = new FormData();
    data.set('model', model);
    if (questions.trim()) data.set('questions', questions);
    data.set('file', f, f.name);
    return data;
  };

  const choose = (f: File | undefined) => {
    setFile(f);
    setCreated('');
  };

  // Every record is checked (POST /v1/batches/validate) as soon as there is a file and a model, and
  // again when either or the questions change; only the newest check's answer is shown.
  useEffect(() => {
    setValidation(undefined);
    setError(undefined);
    if (!file || !model) return;
    let live = true;
    const timer = window.setTimeout(async () => {
      setChecking(true);
      try {
        const result = await getJson<BatchValidation>('/v1/batches/validate', { method: 'POST', body: form(file) });
        if (live) setValidation(result);
      } catch (err) {
        if (live) setError(err);
      } finally {
        if (live) setChecking(false);
      }
    }, 250);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [file, model, questions]);

  const create = async () => {
    if (!file || creatingNow.current) return;
    creatingNow.current = true;
    setCreating(true);
    setError(undefined);
    try {
      const batch = await getJson<Batch>('/v1/batches', { method: 'POST', body: form(file) });
      setCreated(`Created ${batch.id} (${batch.progress.total} records).`);
      setFile(undefined);
      setValidation(undefined);
      onCreated();
    } catch (err) {
      setError(err);
    } finally {
      creatingNow.current = false;
      setCreating(false);
    }
  };

  return (
    <section class="panel create" aria-label="create a batch">
      <h3>New batch</h3>
      <Problem error={modelsError} />
      <div class="row">
        <label>
          model
          <ModelSelect id="batch-model" listing={listing} value={model} onChange={setModel} />
        </label>
      </div>
      <details>
        <summary id="batch-questions-label">Questions for records without their own (optional)</summary>
        <textarea id="batch-questions" aria-labelledby="batch-questions-label" rows={4} value={questions} onInput={(e) => setQuestions((e.target as HTMLTextAreaElement).value)} placeholder='{"refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"}}' />
      </details>
      <label
        class={dragging ? 'dropzone dragging' : 'dropzone'}
        data-dropzone
        onDragOver={(e) => (e.preventDefault(), setDragging(true))}
        onDragLeave={() => setDragging(false)}
        onDrop={(e) => {
          e.preventDefault();
          setDragging(false);
          // Text or a link dragged here is no file: the file already chosen stays.
          const dropped = e.dataTransfer?.files[0];
          if (dropped) choose(dropped);
        }}
      >
        <input
          id="batch-file"
          class="visually-hidden"
          type="file"
          accept=".jsonl,.ndjson,.json,application/x-ndjson,text/plain"
          onChange={(e) => {
            const input = e.target as HTMLInputElement;
            const chosen = input.files?.[0];
            // Emptied at once: the browser reports a change only for a selection that differs from
            // the input's, so the same file chosen again (after a batch, or edited) is read again.
            input.value = '';
            if (chosen) choose(chosen);
          }}
        />
        <span>{file ? `${file.name} (${file.size} bytes)` : 'Drop a JSONL file here, or press to choose one'}</span>
      </label>
      {checking ? <p class="hint">Checking every record…</p> : null}
      <Problem error={error} />
      {validation ? (
        <div class="validation" data-validation={validation.invalid === 0 ? 'ok' : 'errors'}>
          <p role="status">
            {validation.records} records: <b>{validation.valid} valid</b>
            {validation.invalid ? (
              <>
                , <b class="warn">{validation.invalid} invalid</b> (they would become failed rows)
              </>
            ) : null}
            . Model {validation.model}.
          </p>
          {validation.errors.length > 0 ? (
            <LineProblems
              problems={validation.errors.map((e) => ({ at: e.line, custom_id: e.custom_id, code: e.code, message: e.message }))}
              atLabel="line"
              problemLabel="problem"
              tableClass="line-errors"
              rowAttribute={(p) => ({ 'data-error-line': String(p.at) })}
            />
          ) : null}
          {validation.errors_truncated ? <p class="hint">Only the first {validation.errors.length} problems are listed.</p> : null}
          <button type="button" id="create-batch" onClick={create} disabled={creating}>
            {creating
              ? 'Creating…'
              : validation.invalid
              ? `Create anyway (${validation.invalid === 1 ? '1 row' : `${validation.invalid} rows`} will fail)`
              : `Create batch of ${validation.records === 1 ? '1 record' : `${validation.records} records`}`}
          </button>
        </div>
      ) : null}
      {created ? <p role="status">{created}</p> : null}
    </section>
  );
}

export function Batches() {
  const [batches, setBatches] = useState<Array<ReturnType<typeof asBatch>>>();
  const [error, setError] = useState<unknown>();
  const [now, setNow] = useState(Date.now());
  const [tick, setTick] = useState(0);
  const [pages, setPages] = useState(1);
  const [hasMore, setHasMore] = useState(false);
  const timer = useRef<number | undefined>(undefined);

  useEffect(() => {
    let live = true;
    const load = async () => {
      let next = IDLE_POLL_MS;
      try {
        const list = await loadPages(pages);
        if (!live) return;
        const shown = list.batches.map(asBatch);
        setBatches(shown);
        setHasMore(list.hasMore);
        setError(undefined);
        setNow(Date.now());
        if (shown.some((b) => !FINAL.has(b.status))) next = LIVE_POLL_MS;
      } catch (err) {
        if (live) setError(err);
      }
      if (live) timer.current = window.setTimeout(load, next);
    };
    void load();
    return () => {
      live = false;
      clearTimeout(timer.current);
    };
  }, [tick, pages]);
  const refresh = () => setTick((t) => t + 1);

  return (
    <div class="page batches">
      <CreateBatch onCreated={refresh} />
      <section class="panel" aria-label="batches">
        <div class="row">
          <h3>Your batches</h3>
          <span class="hint">newest first; refreshing by itself</span>
        </div>
        <Problem error={error} />
        {batches && batches.length === 0 ? <p class="hint">No batches yet for this key.</p> : null}
        <ul class="batch-list">
          {(batches ?? []).map((b) => (
            <BatchRow key={b.id} batch={b} now={now} onChanged={refresh} />
          ))}
        </ul>
        {hasMore ? (
          <button type="button" id="older-batches" onClick={() => setPages((p) => p + 1)}>
            Show {PAGE_SIZE} older batches
          </button>
        ) : null}
      </section>
    </div>
  );
}
