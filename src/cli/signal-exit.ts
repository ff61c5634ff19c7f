/**
 * The exit status of a command stopped by the operator or the system: 128 plus the signal's
 * number, as a shell reports a process the signal killed (130 for SIGINT, 143 for SIGTERM), so a
 * script or a supervisor tells Ctrl-C from a stop the same way for every command.
 */
export const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;

/** The signals a command stops on. */
export type StopSignal = keyof typeof SIGNAL_EXIT_CODES;
