import { Worker } from 'node:worker_threads';

/**
 * Highest RSS of the process, sampled every 5 ms by a worker thread: onnxruntime-node's
 * session.run blocks the main thread, so a main-thread timer would miss the baseline's peaks.
 */
export class RssSampler {
  private readonly shared = new BigInt64Array(new SharedArrayBuffer(16)); // [peak bytes, stop flag]
  private readonly worker: Worker;

  constructor() {
    this.worker = new Worker(
      `const { workerData } = require('node:worker_threads');
       const v = new BigInt64Array(workerData);
       const tick = () => {
         const rss = BigInt(process.memoryUsage.rss());
         let cur = Atomics.load(v, 0);
         while (rss > cur) {
           const prev = Atomics.compareExchange(v, 0, cur, rss);
           if (prev === cur) break;
           cur = prev;
         }
         if (Atomics.load(v, 1) === 0n) setTimeout(tick, 5);
       };
       tick();`,
      { eval: true, workerData: this.shared.buffer },
    );
    this.worker.unref();
  }

  reset(): void {
    Atomics.store(this.shared, 0, BigInt(process.memoryUsage.rss()));
  }

  peak(): number {
    return Math.max(Number(Atomics.load(this.shared, 0)), process.memoryUsage.rss());
  }

  async stop(): Promise<void> {
    Atomics.store(this.shared, 1, 1n);
    await this.worker.terminate();
  }
}

