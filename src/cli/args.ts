/**
 * Argument parsing shared by the commands: parseCommand() (strict options, --help, the usage
 * error), commandError() and intArg(), so every command accepts and rejects the same values with
 * the same message (a fractional one reads through parseDecimal, as the DECIDE_* variables do).
 * The engine options' flags are in engine-flags.ts.
 */
import { parseArgs } from 'node:util';

/** A command's options as parseArgs() takes them (--help is added). */
type OptionsConfig = Record<string, { type: 'string' | 'boolean'; short?: string; default?: string | boolean }>;

type ValueOf<S> = S extends { type: 'boolean' } ? boolean : string;

/** The parsed values: an option with a default is always there, the others may be missing. */
export type OptionValues<O extends OptionsConfig> = {
  -readonly [K in keyof O as O[K] extends { default: unknown } ? K : never]: ValueOf<O[K]>;
} & {
  -readonly [K in keyof O as O[K] extends { default: unknown } ? never : K]?: ValueOf<O[K]>;
};

/**
 * Parses a command's arguments; an unknown option is an error. Returns the parsed values, or the
 * exit code when the command has nothing left to do: 0 after printing `help` for --help, 2 after
 * printing the usage error and `help` to stderr (after `onUsageError` has the message: a command
 * that promises a machine-readable refusal writes it there).
 * @example
 * const parsed = parseCommand('serve', argv, HELP, { port: { type: 'string' } });
 * if (typeof parsed === 'number') return parsed;
 */
export function parseCommand<const O extends OptionsConfig>(
  command: string,
  argv: string[],
  help: string,
  options: O,
  allowPositionals = false,
  onUsageError?: (message: string) => void,
): { values: OptionValues<O>; positionals: string[] } | number {
  const all: OptionsConfig = { ...options, help: { type: 'boolean', short: 'h' } };
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: all, strict: true, allowPositionals, tokens: true });
    // parseArgs keeps the last of an option given twice: a pasted second --out would send the
    // results somewhere the caller did not read. A value option is taken once.
    const seen = new Set<string>();
    for (const token of parsed.tokens) {
      if (token.kind !== 'option' || all[token.name]?.type !== 'string') continue;
      if (seen.has(token.name)) throw new Error(`--${token.name} is given more than once; give it once`);
      seen.add(token.name);
    }
  } catch (err) {
    onUsageError?.((err as Error).message);
    process.stderr.write(`decide ${command}: ${(err as Error).message}\n\n${help}`);
    return 2;
  }
  if (parsed.values.help) {
    process.stdout.write(help);
    return 0;
  }
  return { values: parsed.values as unknown as OptionValues<O>, positionals: parsed.positionals };
}

/**
 * Reports a command's error the one way every command does: `decide <command>: <message>` on stderr.
 * Returns the exit code to end with: 2 (a usage error) unless another is given.
 * @example
 * if (typeof port === 'string') return commandError('serve', port);
 */
export function commandError(command: string, message: string, code = 2): number {
  process.stderr.write(`decide ${command}: ${message}\n`);
  return code;
}

/** An integer option in [min, max], or the message saying why not. */
export function intArg(value: string, name: string, min: number, max: number): number | string {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(n) || n < min || n > max) {
    return `${name} must be an integer from ${min} to ${max}, got '${value}'`;
  }
  return n;
}

