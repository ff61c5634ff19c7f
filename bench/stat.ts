/** Timings over repetitions, as every bench result reports them (report.ts, http-latency.ts, ...). */

/** Median with the min and max over the timed repetitions. */
export interface Stat {
  median: number;
  min: number;
  max: number;
  samples: number[];
}

export function stat(samples: number[]): Stat {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length === 0 ? NaN : sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median, min: sorted[0] ?? NaN, max: sorted[sorted.length - 1] ?? NaN, samples };
}
