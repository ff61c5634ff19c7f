/**
 * A folder or file named by an environment variable. Unset and empty are the same (the default), as
 * for every other setting: `DECIDE_DATA_DIR=` left blank in a unit file must not mean the current
 * directory, which is what path.resolve('') gives.
 */

/** The variable's value, or undefined when it is unset or blank. */
export function envPath(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value;
}
