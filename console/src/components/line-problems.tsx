/** One problem of a batch file or job, at a line or row of it. */
export interface LineProblem {
  /** 1-based line of the uploaded file, or row of the job's results. */
  at: number;
  custom_id: string | null | undefined;
  code: string;
  message: string;
}

/**
 * The table of a file's or job's problems, one row each: where, custom_id, code and message. Used
 * for the lines validation refused and for a finished job's failed rows, so both read the same.
 */
export function LineProblems({ problems, atLabel, problemLabel, tableClass, rowAttribute }: {
  problems: LineProblem[];
  /** Heading of the first column: 'line' or 'row'. */
  atLabel: string;
  problemLabel: string;
  tableClass: string;
  /** The data-* attribute each row carries (for tests and styling), with its value. */
  rowAttribute: (p: LineProblem) => Record<`data-${string}`, string>;
}) {
  return (
    <div class="scroll"><table class={tableClass}>
      <thead>
        <tr>
          <th scope="col">{atLabel}</th>
          <th scope="col">custom_id</th>
          <th scope="col">{problemLabel}</th>
        </tr>
      </thead>
      <tbody>
        {problems.map((p) => (
          <tr key={p.at} {...rowAttribute(p)}>
            <td>{p.at}</td>
            <td>{p.custom_id ?? '–'}</td>
            <td>
              <code>{p.code}</code> {p.message}
            </td>
          </tr>
        ))}
      </tbody>
    </table></div>
  );
}
