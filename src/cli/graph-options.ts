/**
 * The options make-model and import-model share: how the graph is written (--dtype, --attention,
 * --packing), --force and --no-agreement. Their defaults and their checks live here once, so the
 * two commands cannot drift apart.
 */
import { commandError, type OptionValues } from './args.js';

export const GRAPH_OPTIONS = {
  dtype: { type: 'string', default: 'fp32' },
  attention: { type: 'string', default: 'ops' },
  packing: { type: 'string', default: 'on' },
  force: { type: 'boolean', default: false },
  'no-agreement': { type: 'boolean', default: false },
} as const;

export interface GraphChoice {
  dtype: 'fp32' | 'fp16' | 'int8';
  attention: 'ops' | 'fused';
  /** --packing on: the graph takes decide_segment_ids. */
  segmentIds: boolean;
}

/** The checked graph options, or the exit code of a usage error (2, its message on stderr). */
export function graphChoice(command: string, values: OptionValues<typeof GRAPH_OPTIONS>): GraphChoice | number {
  const { dtype, attention, packing } = values;
  if (dtype !== 'fp32' && dtype !== 'fp16' && dtype !== 'int8') return commandError(command, `--dtype must be fp32, fp16 or int8, got '${dtype}'`);
  if (attention !== 'ops' && attention !== 'fused') return commandError(command, `--attention must be ops or fused, got '${attention}'`);
  if (packing !== 'on' && packing !== 'off') return commandError(command, `--packing must be on or off, got '${packing}'`);
  return { dtype, attention, segmentIds: packing === 'on' };
}
