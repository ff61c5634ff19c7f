/**
 * The signals that stop a command, and the exit status of a command they stopped: 128 plus the
 * signal's number, as a shell reports a process the signal killed (130 for SIGINT, 143 for
 * SIGTERM), so a script or a supervisor tells Ctrl-C from a stop the same way for every command.
 */
export const SIGNAL_EXIT_CODES = { SIGHUP: 129, SIGINT: 130, SIGUSR2: 140, SIGTERM: 143 } as const;

/** The signals a command stops on. */
export type StopSignal = keyof typeof SIGNAL_EXIT_CODES;

/**
 * The signals every command that runs for a while stops gracefully on, each in its own way (serve
 * drains, batch stops after the chunk being written, worker commits the chunks in flight,
 * make-model and import-model remove their staging folder, bench its scratch folders, gpu-report
 * passes the signal to its step). Beside SIGTERM and Ctrl-C: SIGHUP, sent by a closing terminal or ssh
 * session and by operators meaning "reload" (`ExecReload=kill -HUP`, a logrotate postrotate), and
 * SIGUSR2. Neither reloads anything here, and Node's own action for both is to end the process at
 * once: requests in flight cut, no log line, the lock or a half-written folder left behind.
 */
export const GRACEFUL_STOP_SIGNALS: readonly StopSignal[] = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGUSR2'];

/**
 * Calls `handler` on each of GRACEFUL_STOP_SIGNALS (instead of Node's default action) until the
 * returned function is called.
 */
export function onGracefulStop(handler: (signal: StopSignal) => void): () => void {
  for (const signal of GRACEFUL_STOP_SIGNALS) process.on(signal, handler);
  return () => {
    for (const signal of GRACEFUL_STOP_SIGNALS) process.off(signal, handler);
  };
}
