/**
 * A reader that closes early (`decide serve | head -2` to keep the generated key, `2>&1 | head`):
 * the next write to that pipe fails with EPIPE, an 'error' event that, unhandled, kills the
 * process with a stack trace. Every command's output is a by-product of its work (a server, a
 * results file, a model, a report folder), so the work goes on: writes to a stream whose reader is
 * gone are dropped from then on. A command that only prints (--help, the usage) ends right after
 * its write anyway, quietly.
 */

/**
 * Marks a stream already watched: main() may run more than once in a process (an embedder, tests),
 * and with more than one copy of this module (a bundle beside the package), so the mark is on the
 * stream, under a registered symbol, not in this module's state.
 */
const WATCHED = Symbol.for('decide.dropOutputWhenReaderCloses');

/**
 * From now on, stdout and stderr each stop taking writes once their reader is gone, instead of
 * killing the process. Once per stream and process: each call used to add another listener.
 */
export function dropOutputWhenReaderCloses(): void {
  for (const stream of [process.stdout, process.stderr]) {
    const marked = stream as NodeJS.WriteStream & { [WATCHED]?: true };
    if (marked[WATCHED]) continue;
    marked[WATCHED] = true;
    stream.on('error', (err: NodeJS.ErrnoException) => {
      // Any other failure of the stream is as fatal as it was without this listener.
      if (err.code !== 'EPIPE') throw err;
      dropWrites(stream);
    });
  }
}

/** Makes `stream.write` a no-op that still calls the writer's callback, as a write that went through would. */
function dropWrites(stream: NodeJS.WriteStream): void {
  stream.write = ((_chunk: unknown, encodingOrCallback?: unknown, callback?: unknown) => {
    const done = typeof encodingOrCallback === 'function' ? encodingOrCallback : callback;
    if (typeof done === 'function') process.nextTick(done as () => void);
    return true;
  }) as typeof stream.write;
}
