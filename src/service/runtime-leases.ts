/**
 * Which calls hold each model runtime, from taking it to their last engine call. A runtime retired
 * because its directory changed (or went) is closed only once no call holds it: a call that took
 * it before the change is answered by it, never cut off halfway (its tokenizer closed under it),
 * and a call that takes the model after the change gets the version there now.
 * @example
 * const release = leases.hold(runtime);   // throws nothing; check isRetired() first
 * try { await use(runtime); } finally { release(); }
 * void leases.retire(runtime).then(() => runtime.close());
 */
export class RuntimeLeases<Runtime extends object> {
  private readonly holders = new Map<Runtime, number>();
  private readonly whenFree = new Map<Runtime, () => void>();
  private readonly retired = new WeakSet<Runtime>();

  /** True once retire() was called: a caller that has not taken it yet takes the model again. */
  isRetired(runtime: Runtime): boolean {
    return this.retired.has(runtime);
  }

  /** Takes the runtime for one call; the function returned gives it back (once). */
  hold(runtime: Runtime): () => void {
    this.holders.set(runtime, (this.holders.get(runtime) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.holders.get(runtime)! - 1;
      if (left > 0) {
        this.holders.set(runtime, left);
        return;
      }
      this.holders.delete(runtime);
      this.whenFree.get(runtime)?.();
      this.whenFree.delete(runtime);
    };
  }

  /** Marks the runtime retired; resolves once no call holds it. */
  retire(runtime: Runtime): Promise<void> {
    this.retired.add(runtime);
    if (!this.holders.has(runtime)) return Promise.resolve();
    return new Promise((resolve) => this.whenFree.set(runtime, resolve));
  }
}
