/**
 * Bootstrap resampling by data row. The answers of one row (one state's questions) are not
 * independent draws: a file that asks four questions of one type per state holds a quarter of the
 * information its answer count suggests. Drawing whole rows with replacement keeps each row's
 * answers together, so the intervals are as wide as the rows warrant. An answer without a row is a
 * row of its own (then this is the plain bootstrap over answers).
 */

/**
 * Resamples drawn when a caller names none: for the figures' intervals (metrics.ts) and for the
 * fitted parameters' (fit.ts), which refit the correction on every resample and so cost more each.
 */
export const DEFAULT_RESAMPLES = { figures: 1000, parameters: 200 } as const;

export class RowResampler<T> {
  private readonly rows: T[][];
  private readonly size: number;

  /** `rowOf(item, i)`: the item's data row, or undefined when it stands alone. */
  constructor(items: readonly T[], rowOf: (item: T, index: number) => number | undefined) {
    const byRow = new Map<number, T[]>();
    this.rows = [];
    items.forEach((item, i) => {
      const row = rowOf(item, i);
      const members = row === undefined ? undefined : byRow.get(row);
      if (members) {
        members.push(item);
        return;
      }
      const fresh = [item];
      this.rows.push(fresh);
      if (row !== undefined) byRow.set(row, fresh);
    });
    this.size = items.length;
  }

  /** One resample: as many rows as there are, drawn with replacement, their items in row order. */
  draw(random: () => number): T[] {
    if (this.rows.length === this.size) return this.rows.map(() => this.rows[Math.floor(random() * this.rows.length)]![0]!);
    const sample: T[] = [];
    for (let i = 0; i < this.rows.length; i++) sample.push(...this.rows[Math.floor(random() * this.rows.length)]!);
    return sample;
  }
}
