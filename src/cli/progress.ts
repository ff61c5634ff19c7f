/**
 * Progress of a long command on stderr: a bar redrawn in place on a terminal, a plain line every
 * few seconds otherwise (a log file or CI gets periodic lines, not thousands of redraws). Used by
 * `decide batch` and `decide calibrate`.
 */

/** Seconds between plain lines when stderr is not a terminal. */
const LOG_INTERVAL_MS = 5000;
/** Fastest redraw on a terminal. */
const TTY_INTERVAL_MS = 100;

export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '--:--';
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

export class ProgressReporter {
  private lastDraw = 0;
  private drawn = false;

  constructor(
    /** `decide <command>:` prefixes the plain lines. */
    private readonly command: string,
    private readonly total: number,
    /** Rows already done when this run started (a resumed run's rate counts only its own). */
    private readonly startRows = 0,
    private readonly tty = Boolean(process.stderr.isTTY),
    private readonly write: (text: string) => void = (text) => void process.stderr.write(text),
    /** When the work began (a reporter made at the first report would see no time pass). */
    private readonly started = Date.now(),
  ) {}

  /** Shows `rows` done of the total; at most one draw per interval unless `force`. */
  update(rows: number, force = false): void {
    const now = Date.now();
    if (!force && now - this.lastDraw < (this.tty ? TTY_INTERVAL_MS : LOG_INTERVAL_MS)) return;
    this.lastDraw = now;
    this.drawn = true;
    const elapsed = (now - this.started) / 1000;
    const rate = elapsed > 0 ? (rows - this.startRows) / elapsed : 0;
    const eta = rows >= this.total ? 0 : rate > 0 ? (this.total - rows) / rate : Infinity;
    const pct = this.total > 0 ? (100 * rows) / this.total : 100;
    if (this.tty) {
      const width = 30;
      const filled = Math.round((width * pct) / 100);
      const bar = `${'#'.repeat(filled)}${'-'.repeat(width - filled)}`;
      this.write(`\r\x1b[K[${bar}] ${rows}/${this.total} ${pct.toFixed(1)}%  ${rate.toFixed(0)} rows/s  ETA ${formatDuration(eta)}`);
    } else {
      this.write(`decide ${this.command}: ${rows}/${this.total} rows (${pct.toFixed(1)}%), ${rate.toFixed(0)} rows/s, ETA ${formatDuration(eta)}\n`);
    }
  }

  /** Ends the redrawn line on a terminal. */
  end(): void {
    if (this.tty && this.drawn) this.write('\n');
  }
}
