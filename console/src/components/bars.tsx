import type { Answer } from '../types.js';

const percent = (p: number) => `${(p * 100).toFixed(1)}%`;

/** One answer's options as horizontal bars, most probable first. */
export function AnswerBars({ id, answer, descriptions }: { id: string; answer: Answer; descriptions: Record<string, string> }) {
  const options = Object.entries(answer.probs).sort(([, a], [, b]) => b - a);
  return (
    <section class="answer" data-question={id} aria-label={`answer to ${id}`}>
      <header>
        <h3>{id}</h3>
        <span class="badge">{answer.type}</span>
        <span class="top">
          top <b data-top>{answer.top}</b> at <b data-confidence>{percent(answer.confidence)}</b>
        </span>
      </header>
      <ol class="bars">
        {options.map(([key, p]) => (
          <li key={key} class={key === answer.top ? 'bar is-top' : 'bar'} data-option={key} data-prob={String(p)}>
            <span class="bar-label" title={descriptions[key] ? `${key}: ${descriptions[key]}` : key}>
              {key}
              {descriptions[key] ? <small> {descriptions[key]}</small> : null}
            </span>
            <span class="bar-track" role="meter" aria-valuemin={0} aria-valuemax={1} aria-valuenow={p} aria-label={`${key}: ${percent(p)}`}>
              <span class="bar-fill" style={{ width: percent(p) }} />
            </span>
            <span class="bar-value">{percent(p)}</span>
          </li>
        ))}
      </ol>
    </section>
  );
}
