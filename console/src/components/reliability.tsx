import type { HeldOut, ReliabilityBin } from '../types.js';

const SIZE = 300;
const PAD = { left: 44, right: 12, top: 12, bottom: 40 };
const W = SIZE + PAD.left + PAD.right;
const H = SIZE + PAD.top + PAD.bottom;
const x = (v: number) => PAD.left + v * SIZE;
const y = (v: number) => PAD.top + (1 - v) * SIZE;
const TICKS = [0, 0.25, 0.5, 0.75, 1];

/** A bin's accuracy interval: a vertical bar with short caps (none for bins recorded without one). */
function Interval({ bin }: { bin: ReliabilityBin }) {
  if (bin.low === undefined || bin.high === undefined) return null;
  const cx = x(bin.confidence);
  return (
    <g class="interval" data-low={bin.low} data-high={bin.high}>
      <line x1={cx} x2={cx} y1={y(bin.high)} y2={y(bin.low)} />
      <line x1={cx - 3} x2={cx + 3} y1={y(bin.high)} y2={y(bin.high)} />
      <line x1={cx - 3} x2={cx + 3} y1={y(bin.low)} y2={y(bin.low)} />
    </g>
  );
}

function Series({ bins: unordered, name }: { bins: ReliabilityBin[]; name: 'before' | 'after' }) {
  // In order of confidence: the line joins neighbours, and the points read left to right.
  const bins = [...unordered].sort((a, b) => a.confidence - b.confidence);
  const points = bins.map((b) => `${x(b.confidence).toFixed(1)},${y(b.accuracy).toFixed(1)}`).join(' ');
  const interval = (b: ReliabilityBin) => (b.low === undefined || b.high === undefined ? '' : `, 95% interval ${b.low.toFixed(3)} to ${b.high.toFixed(3)}`);
  return (
    <g class={`series series-${name}`} data-series={name}>
      <polyline points={points} fill="none" />
      {bins.map((b, i) => (
        <Interval key={`i${i}`} bin={b} />
      ))}
      {bins.map((b, i) => (
        <circle key={i} cx={x(b.confidence)} cy={y(b.accuracy)} r={3.5} data-confidence={b.confidence} data-accuracy={b.accuracy} data-count={b.count}>
          <title>{`${name}: confidence ${b.confidence.toFixed(3)}, accuracy ${b.accuracy.toFixed(3)}${interval(b)} (${b.count} answers)`}</title>
        </circle>
      ))}
    </g>
  );
}

/** What the points are: "4 equal-mass bins of 20+ answers, 95% intervals". */
function binsCaption(bins: ReliabilityBin[]): string {
  if (bins.length === 0) return 'no bins';
  const fewest = Math.min(...bins.map((b) => b.count));
  const what = `${bins.length} equal-mass bin${bins.length === 1 ? '' : 's'} of ${fewest}+ answers`;
  return bins.every((b) => b.low !== undefined) ? `${what}, 95% intervals` : what;
}

/**
 * The reliability diagram of one question type: accuracy against confidence per equal-mass bin
 * (as many as the held-out answers support), each with its 95% interval, before and after
 * calibration, against the diagonal of perfect calibration (the figure `decide calibrate --report`
 * draws, from the same points).
 */
export function ReliabilityDiagram({ type, figures }: { type: string; figures: HeldOut }) {
  const r = figures.reliability!;
  const fmt = (v: number | undefined) => (v === undefined ? '–' : v.toFixed(3));
  return (
    <figure class="reliability" data-type={type}>
      <svg viewBox={`0 0 ${W} ${H}`} width={W} height={H} role="img" aria-label={`reliability diagram for ${type}`}>
        <rect x={PAD.left} y={PAD.top} width={SIZE} height={SIZE} class="plot" />
        {TICKS.map((t) => (
          <g key={t} class="grid">
            <line x1={x(t)} x2={x(t)} y1={y(0)} y2={y(1)} />
            <line x1={x(0)} x2={x(1)} y1={y(t)} y2={y(t)} />
            <text x={x(t)} y={y(0) + 16} text-anchor="middle">{t}</text>
            <text x={x(0) - 6} y={y(t) + 4} text-anchor="end">{t}</text>
          </g>
        ))}
        <line class="diagonal" x1={x(0)} y1={y(0)} x2={x(1)} y2={y(1)} />
        <Series bins={r.before} name="before" />
        <Series bins={r.after} name="after" />
        <text x={x(0.5)} y={H - 6} text-anchor="middle" class="axis-title">confidence (mean top probability in the bin)</text>
        <text transform={`translate(12 ${y(0.5)}) rotate(-90)`} text-anchor="middle" class="axis-title">accuracy in the bin</text>
      </svg>
      <figcaption>
        <span class="key key-before">before: ECE {fmt(figures.ece_before)}</span>
        <span class="key key-after">after: ECE {fmt(figures.ece)}</span>
        <span data-bins-caption>
          {figures.observations ?? '?'} held-out answers, {binsCaption(r.after)}
        </span>
      </figcaption>
    </figure>
  );
}
