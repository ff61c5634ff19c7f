/**
 * A folder or file named by an environment variable, and the rule it follows with every other
 * setting: unset and empty are the same (the default). `DECIDE_DATA_DIR=` left blank in a unit
 * file must not mean the current directory, which is what path.resolve('') gives. Also the two
 * folders every command and the server default alike: model directories and service state.
 */
import path from 'node:path';

/** The variable's value, or undefined when it is unset or blank. */
export function envPath(env: NodeJS.ProcessEnv, name: string): string | undefined {
  return blankIsUnset(env[name]);
}

/** A setting's value as read from the environment, undefined when it is unset or blank (PORT, say). */
export function blankIsUnset(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

/** A folder setting: the variable that names it and its default, relative to the working directory. */
export interface FolderSetting {
  readonly variable: string;
  readonly fallback: string;
}

/** Model directories: DECIDE_MODELS_DIR, else ./models. */
export const MODELS_FOLDER: FolderSetting = Object.freeze({ variable: 'DECIDE_MODELS_DIR', fallback: 'models' });
/** Service state (the generated API key, batch jobs, uploaded files): DECIDE_DATA_DIR, else ./data. */
export const DATA_FOLDER: FolderSetting = Object.freeze({ variable: 'DECIDE_DATA_DIR', fallback: 'data' });

/**
 * The folder: `given` where the caller names one, else the setting's variable, else its default; resolved.
 * @example folderOf(MODELS_FOLDER, options.modelsDir) // '/srv/app/models' with nothing set in /srv/app
 */
export function folderOf(setting: FolderSetting, given: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(given ?? envPath(env, setting.variable) ?? setting.fallback);
}

/** What a help text says of the folder's default: `env DECIDE_MODELS_DIR; default ./models`. */
export function folderDefaultText(setting: FolderSetting): string {
  return `env ${setting.variable}; default ./${setting.fallback}`;
}
