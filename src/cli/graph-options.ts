/**
 * The options make-model and import-model share: how the graph is written (--dtype, --attention,
 * --causal-states, --own-kernels, --segment-ids), --force and --no-agreement. Their defaults and their checks live here once, so
 * the two commands cannot drift apart. `--packing` is the old name of --segment-ids (the engine's
 * question layout is --pack-suffixes, an engine option; renamed-flags.ts).
 */
import { PRESETS } from '../models/builder/presets.js';
import { commandError, type OptionValues } from './args.js';
import { renamedFlag } from './renamed-flags.js';

export const GRAPH_OPTIONS = {
  dtype: { type: 'string', default: 'fp32' },
  attention: { type: 'string', default: 'ops' },
  'causal-states': { type: 'string', default: 'off' },
  'own-kernels': { type: 'string', default: 'off' },
  'segment-ids': { type: 'string' },
  packing: { type: 'string' },
  force: { type: 'boolean', default: false },
  'no-agreement': { type: 'boolean', default: false },
} as const;

export interface GraphChoice {
  dtype: 'fp32' | 'fp16' | 'int8';
  attention: 'ops' | 'fused';
  /** --causal-states on (with --attention fused): states through a causal kernel in passes without a past. */
  causalStates: boolean;
  /** --own-kernels on (with --attention fused): the engine's own HeadNormRotary and SiluMul operators. */
  ownKernels: boolean;
  /** --segment-ids on (the default): the graph takes decide_segment_ids. */
  segmentIds: boolean;
}

/** The checked graph options, or the exit code of a usage error (2, its message on stderr). */
export function graphChoice(command: string, values: OptionValues<typeof GRAPH_OPTIONS>): GraphChoice | number {
  const { dtype, attention } = values;
  const segmentIds = renamedFlag(command, values, 'packing', 'segment-ids')['segment-ids'] ?? 'on';
  if (dtype !== 'fp32' && dtype !== 'fp16' && dtype !== 'int8') return commandError(command, `--dtype must be fp32, fp16 or int8, got '${dtype}'`);
  if (attention !== 'ops' && attention !== 'fused') return commandError(command, `--attention must be ops or fused, got '${attention}'`);
  if (segmentIds !== 'on' && segmentIds !== 'off') return commandError(command, `--segment-ids must be on or off, got '${segmentIds}'`);
  const causal = values['causal-states'];
  if (causal !== 'on' && causal !== 'off') return commandError(command, `--causal-states must be on or off, got '${causal}'`);
  if (causal === 'on' && attention !== 'fused') return commandError(command, '--causal-states on needs --attention fused');
  const own = values['own-kernels'] ?? 'off';
  if (own !== 'on' && own !== 'off') return commandError(command, `--own-kernels must be on or off, got '${own}'`);
  if (own === 'on' && attention !== 'fused') return commandError(command, '--own-kernels on needs --attention fused');
  return { dtype, attention, causalStates: causal === 'on', ownKernels: own === 'on', segmentIds: segmentIds === 'on' };
}

/** Why --preset `value` names no model builder preset, or undefined (make-model, bench and gpu-report check it alike). */
export function presetProblem(value: string): string | undefined {
  return Object.hasOwn(PRESETS, value) ? undefined : `--preset must be one of ${Object.keys(PRESETS).join(', ')}, got '${value}'`;
}
