/**
 * The order test files start in: the few that spawn npm or several `decide` processes first, since
 * each takes a large share of the run; then vitest's own order (by the durations it cached, or
 * largest file first on a fresh clone, where these small-but-slow files would otherwise start last
 * and leave one worker running alone at the end); then LAST.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const SLOW_FIRST = [
  'test/e2e/install-as-dependency.test.ts',
  // A real browser and server; on a fresh machine it first installs Chromium with apt-get.
  'test/e2e/console.test.ts',
  'test/batches/pg-multiprocess.test.ts',
  'test/batches/crash.test.ts',
  'test/e2e/import-model.test.ts',
  'test/native/model-builder.test.ts',
];

/**
 * Files that start after every other. A CUDA graph replay that fails with an illegal address leaves
 * the worker process's CUDA context broken (error 700 on every later CUDA call), and worker
 * processes run file after file (isolate: false): after it, test/gpu/'s other files probed the card,
 * found it unusable and skipped (an H100, 2026-11-28).
 */
const LAST = ['test/gpu/cuda-graphs.test.ts'];

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      if (LAST.some((name) => f.moduleId.endsWith(name))) return SLOW_FIRST.length + 1;
      const i = SLOW_FIRST.findIndex((name) => f.moduleId.endsWith(name));
      return i < 0 ? SLOW_FIRST.length : i;
    };
    return sorted.map((f, i) => ({ f, i })).sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i).map(({ f }) => f);
  }
}
