/**
 * The progress of long commands (decide calibrate, decide batch): on a terminal one line redrawn
 * in place and ended with a newline; in a log (not a terminal) plain lines, at most one per
 * interval, with the final one forced.
 */
import { describe, expect, it } from 'vitest';

import { formatDuration, ProgressReporter } from '../../src/cli/progress.js';

function capture() {
  const out: string[] = [];
  return { out, write: (text: string) => void out.push(text) };
}

describe('ProgressReporter', () => {
  it('on a terminal: redraws one line (carriage return, clear) and ends it with a newline', () => {
    const { out, write } = capture();
    const p = new ProgressReporter('calibrate', 200, 0, true, write);
    p.update(50);
    p.update(200, true);
    p.end();
    expect(out).toHaveLength(3);
    expect(out[0]).toMatch(/^\r\x1b\[K\[#{8}-{22}\] 50\/200 25\.0%/);
    expect(out[1]).toMatch(/^\r\x1b\[K\[#{30}\] 200\/200 100\.0%/);
    expect(out[2]).toBe('\n');
  });

  it('in a log: one plain line per interval, the last one forced; no newline to end', () => {
    const { out, write } = capture();
    const p = new ProgressReporter('calibrate', 200, 0, false, write);
    p.update(10); // the first line
    p.update(20); // within the interval: nothing
    p.update(200, true);
    p.end();
    expect(out).toHaveLength(2);
    expect(out[0]).toMatch(/^decide calibrate: 10\/200 rows \(5\.0%\), \d+ rows\/s, ETA [\d:-]+\n$/);
    expect(out[1]).toMatch(/^decide calibrate: 200\/200 rows \(100\.0%\)/);
  });

  it('made at the first report with the time the work began: a real rate, and ETA 0:00 when done', () => {
    const { out, write } = capture();
    const p = new ProgressReporter('calibrate', 200, 0, false, write, Date.now() - 4000);
    p.update(200, true);
    expect(out[0]).toMatch(/^decide calibrate: 200\/200 rows \(100\.0%\), (4[0-9]|50) rows\/s, ETA 0:00\n$/);
  });

  it('formats durations as m:ss or h:mm:ss', () => {
    expect(formatDuration(65)).toBe('1:05');
    expect(formatDuration(3725)).toBe('1:02:05');
    expect(formatDuration(Infinity)).toBe('--:--');
  });
});
