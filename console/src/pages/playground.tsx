import { useEffect, useRef, useState } from 'preact/hooks';

import { parseJsonText } from '../../../src/api/json-text.js';
import { entriesInOrder, objectInOrder } from '../../../src/domain/key-order.js';
import { postJson } from '../api.js';
import { AnswerBars } from '../components/bars.js';
import { Problem } from '../components/problem.js';
import { asCurl, asOpenAi, asSystemOne, copyAsProblem } from '../copy-as.js';
import { draftsProblem, nextOptionKey, nextQuestionId, type Draft, type Option } from '../drafts.js';
import { readForm, storeForm } from '../form-store.js';
import type { DecideRequest, DecideResponse, Question, QuestionType } from '../types.js';
import { modelChoices, ModelSelect, useModels } from '../use-models.js';


const NOUL_OPTIONS: Option[] = [
  { key: 'no', description: '' },
  { key: 'yes', description: '' },
];
const STARTER: Draft[] = [
  {
    id: 'topic',
    type: 'choice',
    instructions: 'What is the ticket about?',
    options: [
      { key: 'shipping', description: 'Delivery and parcels' },
      { key: 'billing', description: 'Charges and invoices' },
      { key: 'other', description: 'Anything else' },
    ],
  },
  { id: 'refund', type: 'noul', instructions: 'Does the customer ask for a refund?', options: NOUL_OPTIONS },
  {
    id: 'urgency',
    type: 'score',
    instructions: 'How urgent is it?',
    options: [
      { key: '0', description: 'not urgent' },
      { key: '1', description: 'somewhat urgent' },
      { key: '2', description: 'urgent' },
    ],
  },
];
const STARTER_STATE = 'My parcel never arrived and I was charged twice. I want my money back.';

function defaultOptions(type: QuestionType): Option[] {
  if (type === 'noul') return NOUL_OPTIONS;
  if (type === 'score') return ['0', '1', '2'].map((key) => ({ key, description: '' }));
  return [
    { key: 'a', description: '' },
    { key: 'b', description: '' },
  ];
}

function toQuestion(d: Draft): Question {
  const described = d.options.filter((o) => o.description !== '');
  if (d.type === 'noul') {
    // noul criteria are optional; when given they describe both no and yes.
    return described.length === 0
      ? { type: 'noul', instructions: d.instructions }
      : { type: 'noul', instructions: d.instructions, criteria: { no: d.options[0]!.description, yes: d.options[1]!.description } };
  }
  // In the rows' order, integer-like keys included (JavaScript would list "0", "7" first).
  return { type: d.type, instructions: d.instructions, criteria: objectInOrder(d.options.map((o) => [o.key, o.description] as const)) };
}

/**
 * The options a question takes on when its type changes: those it last had as that type in this
 * editor (a type tried and changed back loses nothing typed), else the type's defaults with the
 * descriptions typed so far kept row by row.
 */
function optionsForType(type: QuestionType, draft: Draft, kept: Partial<Record<QuestionType, Option[]>>): Option[] {
  const earlier = kept[type];
  if (earlier) return earlier;
  const defaults = defaultOptions(type);
  if (type === 'noul' || draft.type === 'noul') return defaults;
  return defaults.map((o, i) => ({ ...o, description: draft.options[i]?.description ?? '' }));
}

function QuestionEditor({ draft, index, onChange, onRemove }: { draft: Draft; index: number; onChange: (d: Draft) => void; onRemove: () => void }) {
  const prefix = `q${index}`;
  // Editors are keyed by position: the memory belongs to the question it was made for (a removed
  // question before this one hands this editor another question, with another id).
  const kept = useRef<{ id: string; byType: Partial<Record<QuestionType, Option[]>> }>({ id: draft.id, byType: {} });
  if (kept.current.id !== draft.id) kept.current = { id: draft.id, byType: {} };
  const setOption = (i: number, patch: Partial<Option>) => onChange({ ...draft, options: draft.options.map((o, j) => (j === i ? { ...o, ...patch } : o)) });
  return (
    <fieldset class="question" data-question-editor={draft.id}>
      <legend>Question {index + 1}</legend>
      <div class="row">
        <label>
          id
          <input id={`${prefix}-id`} value={draft.id} onInput={(e) => onChange({ ...draft, id: (e.target as HTMLInputElement).value })} />
        </label>
        <label>
          type
          <select
            id={`${prefix}-type`}
            value={draft.type}
            onChange={(e) => {
              const type = (e.target as HTMLSelectElement).value as QuestionType;
              kept.current.byType[draft.type] = draft.options;
              onChange({ ...draft, type, options: optionsForType(type, draft, kept.current.byType) });
            }}
          >
            <option value="noul">noul (no / yes)</option>
            <option value="choice">choice</option>
            <option value="score">score (levels)</option>
          </select>
        </label>
        <button type="button" class="quiet" onClick={onRemove} aria-label={`remove question ${draft.id}`}>
          Remove
        </button>
      </div>
      <label class="wide">
        instructions
        <input id={`${prefix}-instructions`} value={draft.instructions} onInput={(e) => onChange({ ...draft, instructions: (e.target as HTMLInputElement).value })} />
      </label>
      <table class="options">
        <thead>
          <tr>
            <th scope="col">{draft.type === 'score' ? 'level' : 'option'}</th>
            <th scope="col">description{draft.type === 'noul' ? ' (optional)' : ''}</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {draft.options.map((o, i) => (
            <tr key={i}>
              <td>
                <input
                  aria-label={`${draft.id} option ${i + 1} key`}
                  value={o.key}
                  readOnly={draft.type === 'noul'}
                  inputMode={draft.type === 'score' ? 'decimal' : undefined}
                  onInput={(e) => setOption(i, { key: (e.target as HTMLInputElement).value })}
                />
              </td>
              <td>
                <input aria-label={`${draft.id} option ${i + 1} description`} value={o.description} onInput={(e) => setOption(i, { description: (e.target as HTMLInputElement).value })} />
              </td>
              <td>
                {draft.type !== 'noul' && draft.options.length > 2 ? (
                  <button type="button" class="quiet" aria-label={`remove option ${o.key}`} onClick={() => onChange({ ...draft, options: draft.options.filter((_, j) => j !== i) })}>
                    ×
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {draft.type !== 'noul' ? (
        <button
          type="button"
          class="quiet"
          aria-label={`add ${draft.type === 'score' ? 'a level' : 'an option'} to ${draft.id}`}
          onClick={() => {
            onChange({ ...draft, options: [...draft.options, { key: nextOptionKey(draft), description: '' }] });
          }}
        >
          + {draft.type === 'score' ? 'level' : 'option'}
        </button>
      ) : null}
    </fieldset>
  );
}

type Dialect = 'curl' | 'systemone' | 'openai';
const DIALECTS: Array<{ id: Dialect; label: string }> = [
  { id: 'curl', label: 'curl' },
  { id: 'systemone', label: '/v1/systemone JSON' },
  { id: 'openai', label: 'openai SDK' },
];

function CopyAs({ request }: { request: DecideRequest }) {
  const [dialect, setDialect] = useState<Dialect>('curl');
  const [copied, setCopied] = useState('');
  const origin = location.origin;
  // A dialect that cannot ask this very question offers no snippet, only the reason.
  const problem = dialect === 'curl' ? undefined : copyAsProblem(dialect, request);
  const text = problem ?? (dialect === 'curl' ? asCurl(origin, request) : dialect === 'systemone' ? asSystemOne(request) : asOpenAi(origin, request));
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied('Copied to the clipboard.');
    } catch {
      setCopied('The browser refused the clipboard: select the text and copy it.');
    }
  };
  return (
    <section class="copy-as" aria-label="Copy as">
      <div class="row" role="group" aria-label="Copy as">
        <span>Copy as</span>
        {DIALECTS.map((d) => (
          <button key={d.id} type="button" class="tab" aria-pressed={dialect === d.id} data-dialect={d.id} onClick={() => (setDialect(d.id), setCopied(''))}>
            {d.label}
          </button>
        ))}
        <button type="button" onClick={copy} disabled={problem !== undefined}>
          Copy
        </button>
        <span role="status">{copied}</span>
      </div>
      {problem ? (
        <p class="hint" data-snippet-unavailable={dialect}>
          {problem}
        </p>
      ) : (
        <pre class="snippet" data-snippet={dialect} tabIndex={0} aria-label={`the request as ${DIALECTS.find((d) => d.id === dialect)?.label ?? dialect}`}>
          {text}
        </pre>
      )}
    </section>
  );
}

export function Playground() {
  const { listing, error: modelsError } = useModels();
  // What was typed before this page was last left (another page, or a rejected key), else the starter.
  const [saved] = useState(readForm);
  const [model, setModel] = useState(saved?.model ?? '');
  const [stateMode, setStateMode] = useState<'text' | 'json'>(saved?.stateMode ?? 'text');
  const [stateText, setStateText] = useState(saved?.stateText ?? STARTER_STATE);
  const [drafts, setDrafts] = useState<Draft[]>(saved?.drafts ?? STARTER);
  const [running, setRunning] = useState(false);
  const [error, setError] = useState<unknown>();
  const [result, setResult] = useState<{ response: DecideResponse; latencyMs: number; request: DecideRequest }>();

  const [unsaved, setUnsaved] = useState(false);
  useEffect(() => setUnsaved(!storeForm({ model, stateMode, stateText, drafts })), [model, stateMode, stateText, drafts]);
  useEffect(() => {
    // A kept model this key's listing lacks would be sent while the list shows another.
    const choices = modelChoices(listing);
    if (listing && !choices.some((c) => c.value === model)) setModel(choices[0]?.value ?? '');
  }, [listing]);

  // Run sends only a model the select shows: not a kept one while the listing is missing or failed.
  const modelShown = modelChoices(listing).some((c) => c.value === model);
  let request: DecideRequest | undefined;
  let formProblem = '';
  try {
    let state: DecideRequest['state'] = stateText;
    if (stateMode === 'json') {
      // Parsed as the server parses it: keys keep the order they were typed in.
      const parsed = parseJsonText(stateText);
      if (!parsed.ok) throw new Error(parsed.reason);
      if (typeof parsed.value !== 'object' || parsed.value === null || Array.isArray(parsed.value)) throw new Error('the state must be a JSON object');
      state = parsed.value as Record<string, unknown>;
    }
    formProblem = draftsProblem(drafts);
    if (!formProblem) request = { model, state, questions: objectInOrder(drafts.map((d) => [d.id, toQuestion(d)] as const)) };
  } catch (err) {
    formProblem = `State: ${(err as Error).message}`;
  }

  const run = async (e: Event) => {
    e.preventDefault();
    if (!request) return;
    setRunning(true);
    setError(undefined);
    const started = performance.now();
    try {
      const response = await postJson<DecideResponse>('/v1/decide', request);
      setResult({ response, latencyMs: performance.now() - started, request });
    } catch (err) {
      setError(err);
      setResult(undefined);
    } finally {
      setRunning(false);
    }
  };

  const descriptions = (id: string) => Object.fromEntries((result?.request.questions[id]?.criteria && Object.entries(result.request.questions[id]!.criteria!)) || []);

  return (
    <div class="page playground">
      <form class="panel" onSubmit={run} aria-label="decision request">
        <Problem error={modelsError} />
        <div class="row">
          <label>
            model
            <ModelSelect id="model" listing={listing} value={model} onChange={setModel} />
          </label>
          <fieldset class="inline">
            <legend>state as</legend>
            <label>
              <input type="radio" name="state-mode" checked={stateMode === 'text'} onChange={() => setStateMode('text')} /> text
            </label>
            <label>
              <input type="radio" name="state-mode" checked={stateMode === 'json'} onChange={() => setStateMode('json')} /> JSON
            </label>
          </fieldset>
        </div>
        <label class="wide">
          state
          <textarea id="state" rows={4} value={stateText} onInput={(e) => setStateText((e.target as HTMLTextAreaElement).value)} />
        </label>
        {unsaved ? (
          <p class="hint" role="status" data-form-unsaved>
            This form is too large for the tab to keep: a reload or another page loses it.
          </p>
        ) : null}
        {drafts.map((d, i) => (
          <QuestionEditor
            key={i}
            draft={d}
            index={i}
            onChange={(next) => setDrafts(drafts.map((x, j) => (j === i ? next : x)))}
            onRemove={() => setDrafts(drafts.filter((_, j) => j !== i))}
          />
        ))}
        <div class="row">
          <button type="button" class="quiet" onClick={() => setDrafts([...drafts, { id: nextQuestionId(drafts), type: 'noul', instructions: '', options: NOUL_OPTIONS }])}>
            + question
          </button>
          <button type="submit" id="run" disabled={running || !request || !modelShown}>
            {running ? 'Running…' : 'Run'}
          </button>
        </div>
        {formProblem ? (
          <p class="problem" role="alert">
            {formProblem}
          </p>
        ) : null}
        {request ? <CopyAs request={request} /> : null}
      </form>
      {/* While a run is in flight the answers shown are the previous request's: marked busy and stale. */}
      <section class={running && result ? 'panel results stale' : 'panel results'} aria-live="polite" aria-busy={running} aria-label="answers">
        <Problem error={error} />
        {running && result ? (
          <p class="hint" role="status" data-stale>
            Running… the answers below are the previous request's.
          </p>
        ) : null}
        {result ? (
          <>
            <dl class="facts" data-result={result.response.id}>
              <div>
                <dt>model</dt>
                <dd data-model>{result.response.model}</dd>
              </div>
              <div>
                <dt>latency</dt>
                <dd data-latency>{result.latencyMs.toFixed(0)} ms</dd>
              </div>
              <div>
                <dt>input tokens</dt>
                <dd data-input-tokens>{result.response.usage.input_tokens}</dd>
              </div>
              <div>
                <dt>cached tokens</dt>
                <dd data-cached-tokens>{result.response.usage.cached_tokens}</dd>
              </div>
              <div>
                <dt>request id</dt>
                <dd>
                  <code>{result.response.id}</code>
                </dd>
              </div>
            </dl>
            {/* In the request's question order: the browser's JSON.parse lists integer-like ids first. */}
            {entriesInOrder(result.request.questions).map(([id]) => (
              <AnswerBars key={id} id={id} answer={result.response.answers[id]!} descriptions={descriptions(id)} />
            ))}
          </>
        ) : !error ? (
          <p class="hint">Run the request to see each question's options as bars.</p>
        ) : null}
      </section>
    </div>
  );
}
