/**
 * The engine options as `decide` flags, derived from ENGINE_OPTIONS (src/engine/engine-options.ts):
 * every command that loads an engine spreads ENGINE_FLAGS into its options, appends
 * ENGINE_FLAGS_HELP to its --help and reads the values with engineOptionsFromFlags(), so each
 * option has the same flag, check and message in every command.
 */
import {
  ENGINE_OPTION_NAMES,
  ENGINE_OPTIONS,
  optionConflict,
  PROVIDER_DEFAULTS,
  withEnvironment,
  type EngineOptions,
  type EngineOptionSpec,
} from '../engine/engine-options.js';
import { parseText, placeholderOf, ruleOf, showValue } from '../engine/option-checks.js';

/** parseArgs()'s config for every engine flag: each takes a string, checked by engineOptionsFromFlags(). */
export const ENGINE_FLAGS: Readonly<Record<string, { readonly type: 'string' }>> = Object.fromEntries(
  ENGINE_OPTION_NAMES.map((name) => [ENGINE_OPTIONS[name].flag.slice(2), { type: 'string' } as const]),
);

/** An option's default as --help and the docs show it: one value, a value per provider, or words. */
export function defaultOf(spec: EngineOptionSpec): string {
  if (spec.defaultText !== undefined) return spec.defaultText;
  const byProvider = (Object.keys(PROVIDER_DEFAULTS) as Array<keyof typeof PROVIDER_DEFAULTS>).map((p) => [p, spec.default(p)] as const);
  const shown = (v: unknown) => (typeof v === 'number' && v >= 2 ** 20 && v % 2 ** 20 === 0 ? `${v} (${v % 2 ** 30 === 0 ? `${v / 2 ** 30} GiB` : `${v / 2 ** 20} MiB`})` : showValue(v as never));
  const values = new Set(byProvider.map(([, v]) => v));
  return values.size === 1 ? shown(byProvider[0]![1]) : byProvider.map(([p, v]) => `${shown(v)} on ${p}`).join(', ');
}

/** Words of `text` in lines of at most `width` characters, each after `indent` spaces. */
function wrap(text: string, indent: number, width = 100): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && indent + line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  return [...lines, line];
}

const HELP_COLUMN = 30;

/** The `engine options:` section of a command's --help: flag, rule, variable and default of each. */
export const ENGINE_FLAGS_HELP = `engine options (each also a DECIDE_* variable; a flag wins over its variable):
${ENGINE_OPTION_NAMES.map((name) => {
  const spec = ENGINE_OPTIONS[name];
  const usage = `  ${spec.flag} ${placeholderOf(spec.check)}`;
  const [first = '', ...rest] = wrap(`${spec.help} (${spec.env}; default ${defaultOf(spec)})`, HELP_COLUMN);
  const head = usage.length < HELP_COLUMN ? `${usage.padEnd(HELP_COLUMN)}${first}` : `${usage}\n${' '.repeat(HELP_COLUMN)}${first}`;
  return [head, ...rest.map((l) => `${' '.repeat(HELP_COLUMN)}${l}`)].join('\n');
}).join('\n')}
`;

/**
 * The engine options the flags give (checked: a bad value is the message naming the flag), after
 * checking the DECIDE_* variables too, so that a bad one is a usage error before any model loads.
 * The variables themselves are read by the engine at load (withEnvironment), for the library too.
 */
export function engineOptionsFromFlags(values: Record<string, unknown>): EngineOptions | string {
  const options: Record<string, unknown> = {};
  for (const name of ENGINE_OPTION_NAMES) {
    const spec = ENGINE_OPTIONS[name];
    const text = values[spec.flag.slice(2)];
    if (typeof text !== 'string') continue;
    const value = parseText(spec.check, text);
    if (value === undefined) return `${spec.flag} must be ${ruleOf(spec.check)}, got '${text}'`;
    options[name] = value;
  }
  let merged: EngineOptions;
  try {
    merged = withEnvironment(options as EngineOptions);
  } catch (err) {
    return (err as Error).message;
  }
  const conflict = optionConflict(merged);
  if (conflict !== undefined) {
    // Named as the user gave it: the option's name becomes its flag, or its variable.
    const name = conflict.split(' ')[0] as keyof EngineOptions;
    const spec = ENGINE_OPTIONS[name];
    return `${options[name] !== undefined ? spec.flag : spec.env}${conflict.slice(name.length)}`;
  }
  return options as EngineOptions;
}
