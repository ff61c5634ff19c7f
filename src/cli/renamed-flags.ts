/**
 * Flags that were renamed and still work. `--packing` meant two things: the graph feature in
 * make-model and import-model (now `--segment-ids`) and the engine's question layout in bench and
 * gpu-report (now `--pack-suffixes`). Each command still takes `--packing` in its old meaning and
 * says, on stderr, which name to use.
 */

const MEANING: Record<string, string> = {
  'pack-suffixes': "the engine's question layout",
  'segment-ids': 'whether the graph takes segment ids',
};

/**
 * The parsed values with `--<old>` moved to `--<now>` (a notice on stderr); where both are given,
 * `--<now>` wins and the notice says so.
 */
export function renamedFlag<V extends Record<string, unknown>>(command: string, values: V, old: string, now: string): V {
  if (values[old] === undefined) return values;
  const meaning = MEANING[now] ? ` (${MEANING[now]})` : '';
  const both = values[now] !== undefined;
  process.stderr.write(`decide ${command}: --${old} is now --${now}${meaning}; ${both ? `ignoring --${old}, --${now} is given` : `taking --${old} ${String(values[old])} as --${now}`}\n`);
  return both ? values : { ...values, [now]: values[old] };
}
