import { describe } from '../api.js';

/** An API error shown as what it means (never a blank panel). */
export function Problem({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  const { title, detail } = describe(error);
  return (
    <div class="problem" role="alert">
      <strong>{title}</strong>
      {detail ? <p>{detail}</p> : null}
    </div>
  );
}
