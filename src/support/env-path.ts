/**
 * A folder or file named by an environment variable, and the rule it follows with every other
 * setting: unset and empty are the same (the default). `DECIDE_DATA_DIR=` left blank in a unit
 * file must not mean the current directory, which is what path.resolve('') gives.
 */

/** The variable's value, or undefined when it is unset or blank. */
export function envPath(env: NodeJS.ProcessEnv, name: string): string | undefined {
  return blankIsUnset(env[name]);
}

/** A setting's value as read from the environment, undefined when it is unset or blank (PORT, say). */
export function blankIsUnset(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
