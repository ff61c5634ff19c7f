import type { Engine, ScoreGroup } from '../src/engine/engine.js';
import { modelFlops } from './flops.js';
import type { ProfileResult } from './report.js';
import { stat } from './stat.js';
import { addCounters, zeroCounters } from './systems.js';
import { groupsOf, type Workload } from './workloads.js';

/**
 * The engine's two passes timed apart: a call whose groups carry a 1-token suffix each (the prefix
 * pass, plus a negligible suffix pass), then the real call with every prefix cached (the suffix
 * pass alone).
 */
export async function profilePasses(engine: Engine, w: Workload, repetitions: number, bodyParams: number, headFlopParams: number): Promise<ProfileResult> {
  const full: ScoreGroup[] = w.items.map((item) => item.prepared.group);
  const prefixOnly: ScoreGroup[] = full.map((g) => ({
    prefix: g.prefix,
    suffixes: [{ tokens: g.suffixes[0]!.tokens.subarray(g.suffixes[0]!.tokens.length - 1), labels: g.suffixes[0]!.labels }],
  }));
  const prefixSeconds: number[] = [];
  const suffixSeconds: number[] = [];
  let prefixCounters = zeroCounters();
  let suffixCounters = zeroCounters();
  for (let r = 0; r < repetitions + 1; r++) {
    engine.clearPrefixCache();
    const pc = zeroCounters();
    const sc = zeroCounters();
    let t = performance.now();
    for (const call of w.calls) {
      const groups = call.map((item) => prefixOnly[w.items.indexOf(item)]!);
      addCounters(pc, (await engine.scoreBatch(groups)).counters);
    }
    const p = (performance.now() - t) / 1000;
    t = performance.now();
    for (const call of w.calls) addCounters(sc, (await engine.scoreBatch(groupsOf(call))).counters);
    const s = (performance.now() - t) / 1000;
    if (r === 0) continue; // warm-up
    prefixSeconds.push(p);
    suffixSeconds.push(s);
    prefixCounters = pc;
    suffixCounters = sc;
  }
  const rows = w.tokens.decisions;
  const pastTokens = w.items.reduce((n, item) => n + item.prepared.group.prefix.length * item.prepared.group.suffixes.length, 0);
  const prefixStat = stat(prefixSeconds);
  const suffixStat = stat(suffixSeconds);
  return {
    workload: w.spec.name,
    prefixPassSeconds: prefixStat,
    suffixPassSeconds: suffixStat,
    prefixTokens: prefixCounters.prefixTokensComputed,
    suffixTokens: suffixCounters.suffixTokens,
    suffixRows: rows,
    meanPastTokens: pastTokens / rows,
    counters: { prefix: prefixCounters, suffix: suffixCounters },
    prefixGflops: modelFlops(bodyParams, headFlopParams, prefixCounters.prefixTokensComputed, 0) / prefixStat.median / 1e9,
    suffixGflops: modelFlops(bodyParams, headFlopParams, suffixCounters.suffixTokens, rows) / suffixStat.median / 1e9,
    suffixForkBytes: pastTokens * engine.info.kvBytesPerToken,
  };
}

