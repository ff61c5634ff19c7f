/**
 * API keys: where they come from and how a presented key is checked.
 *
 * Keys come from configuration only (docs/api.md): `DECIDE_API_KEYS` (comma-separated), a keys
 * file named by `DECIDE_API_KEYS_FILE` (one key per line, `#` comment lines, blank lines ignored,
 * or pre-hashed `sha256:<64 hex>` lines), or the options of createServer(). When none is configured,
 * `decide serve` creates one random key in `<dataDir>/api-key` (mode 0600, the data dir 0700) and
 * prints it once. A keys file (or api-key) that group or others can read is used, with a warning
 * (ResolvedKeys.warnings): refusing it would take a running deployment down over a chmod.
 *
 * Only SHA-256 hashes are kept in memory. A presented key is hashed and compared with every stored
 * hash by crypto.timingSafeEqual, without stopping at the first match, so the time taken does not
 * depend on which key (if any) matched. Each key has a `keyId`: the first 16 hex digits of its
 * hash, stable across restarts and safe to log; batch ownership uses it.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { GENERATED_KEY_FILE } from '../batches/private-files.js';
import { makeDirectories } from '../models/make-directories.js';
import { DATA_FOLDER, folderOf } from '../support/env-path.js';

const HASHED_LINE = /^sha256:([0-9a-fA-F]{64})$/;
/** Keys are opaque tokens; what RFC 6750 allows in a bearer token (b64token). */
const KEY_CHARS = /^[A-Za-z0-9\-._~+/]+=*$/;
// The generated key's file name in the data dir, with the data dir's other names (private-files.ts).
export { GENERATED_KEY_FILE };

export function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** The non-secret id of a key hash. */
export function keyIdOf(hash: Buffer): string {
  return hash.toString('hex').slice(0, 16);
}

export class ApiKeySet {
  private readonly hashes: Buffer[] = [];

  /** Adds a key given in clear, or pre-hashed as `sha256:<hex>`. */
  add(entry: string, where = 'API key'): this {
    const text = entry.trim();
    const hashed = HASHED_LINE.exec(text);
    if (hashed) return this.addHash(Buffer.from(hashed[1]!, 'hex'));
    if (!text) throw new Error(`${where}: empty key`);
    // The message never repeats the key itself.
    if (!KEY_CHARS.test(text)) {
      throw new Error(`${where}: a key may hold only letters, digits and - . _ ~ + / = (or be sha256:<64 hex digits>)`);
    }
    return this.addHash(sha256(text));
  }

  addHash(hash: Buffer): this {
    if (hash.length !== 32) throw new Error('API key hash: must be 32 bytes (SHA-256)');
    if (!this.hashes.some((h) => h.equals(hash))) this.hashes.push(Buffer.from(hash));
    return this;
  }

  get size(): number {
    return this.hashes.length;
  }

  /** The keyIds of the configured keys (non-secret). */
  keyIds(): string[] {
    return this.hashes.map(keyIdOf);
  }

  /** The keyId of `key` when it is configured, else undefined. Constant time over the set. */
  verify(key: string): string | undefined {
    const presented = sha256(key);
    let match: Buffer | undefined;
    for (const h of this.hashes) {
      // No early exit: every stored hash is compared.
      if (timingSafeEqual(presented, h)) match = h;
    }
    return match ? keyIdOf(match) : undefined;
  }
}

/** Parses the text of a keys file into `set`. Line numbers name bad lines; keys are never echoed. */
export function parseKeysFile(text: string, set = new ApiKeySet(), source = 'keys file'): ApiKeySet {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    set.add(line, `${source}, line ${i + 1}`);
  });
  return set;
}

export function readKeysFile(file: string, set = new ApiKeySet()): ApiKeySet {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the API keys file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  return parseKeysFile(text, set, file);
}

/** A warning when group or others can read the keys file `file` (its keys would be theirs). */
export function keysFileWarning(file: string): string | undefined {
  let mode: number;
  try {
    mode = statSync(file).mode & 0o777;
  } catch {
    return undefined;
  }
  if ((mode & 0o044) === 0) return undefined;
  return `the API keys file ${file} is mode ${mode.toString(8).padStart(4, '0')}: others on this machine can read the keys; chmod 600 it`;
}

/** A fresh random key: `dk_` + 32 random bytes, base64url. */
export function generateApiKey(): string {
  return `dk_${randomBytes(32).toString('base64url')}`;
}

export interface KeySourceOptions {
  /** Keys in clear or as `sha256:<hex>`. */
  apiKeys?: string[];
  /** A keys file (format above). */
  keysFile?: string;
  /** Environment to read DECIDE_API_KEYS / DECIDE_API_KEYS_FILE from when neither option is given. */
  env?: NodeJS.ProcessEnv;
  /** Where the generated key lives (`<dataDir>/api-key`). */
  dataDir?: string;
  /** Create `<dataDir>/api-key` when no key is configured and the file does not exist yet. */
  generate?: boolean;
}

export interface ResolvedKeys {
  keys: ApiKeySet;
  /** What supplied the keys. */
  source: 'options' | 'env' | 'generated-file';
  /** Set when the keys came from `<dataDir>/api-key`. */
  generated?: { path: string; created: boolean; keyId: string; /** The key, only when just created. */ key?: string };
  /** Keys files readable by group or others (the caller logs them). */
  warnings: string[];
}

const fileWarnings = (...files: Array<string | undefined>) =>
  files.flatMap((f) => {
    const w = f ? keysFileWarning(f) : undefined;
    return w ? [w] : [];
  });

/**
 * Finds the configured keys: options first, else the environment, else `<dataDir>/api-key`
 * (created when `generate` is set). Throws when there is no key at all.
 */
export function resolveApiKeys(options: KeySourceOptions): ResolvedKeys {
  const keys = new ApiKeySet();
  if (options.apiKeys !== undefined || options.keysFile !== undefined) {
    options.apiKeys?.forEach((k, i) => keys.add(k, `apiKeys[${i}]`));
    if (options.keysFile !== undefined) readKeysFile(options.keysFile, keys);
    if (keys.size === 0) throw new Error('no API keys: the configured key list and keys file are empty');
    return { keys, source: 'options', warnings: fileWarnings(options.keysFile) };
  }
  const env = options.env ?? process.env;
  const fromEnv = env.DECIDE_API_KEYS;
  const fileFromEnv = env.DECIDE_API_KEYS_FILE;
  if ((fromEnv !== undefined && fromEnv.trim() !== '') || (fileFromEnv !== undefined && fileFromEnv !== '')) {
    fromEnv
      ?.split(',')
      .map((k) => k.trim())
      .filter((k) => k !== '')
      .forEach((k, i) => keys.add(k, `DECIDE_API_KEYS entry ${i + 1}`));
    if (fileFromEnv) readKeysFile(fileFromEnv, keys);
    if (keys.size === 0) throw new Error('no API keys: DECIDE_API_KEYS and DECIDE_API_KEYS_FILE hold no key');
    return { keys, source: 'env', warnings: fileWarnings(fileFromEnv) };
  }
  const dataDir = folderOf(DATA_FOLDER, options.dataDir, env);
  const file = path.join(dataDir, GENERATED_KEY_FILE);
  let created = false;
  let key: string | undefined;
  try {
    key = readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new Error(`cannot read the API key file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  }
  if (key === undefined) {
    if (!options.generate) {
      throw new Error(
        'no API keys configured: set DECIDE_API_KEYS or DECIDE_API_KEYS_FILE (or pass apiKeys/keysFile); ' +
          `decide serve creates one in ${file}`,
      );
    }
    makeDirectories(dataDir, 0o700);
    const fresh = generateApiKey();
    try {
      // 'wx': never overwrite a key another process has just written.
      writeFileSync(file, `${fresh}\n`, { mode: 0o600, flag: 'wx' });
      key = fresh;
      created = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
        // The file is ours ('wx' made it): a write that failed part way (a full disk) must not
        // leave an empty or cut key that every later start refuses. The next start makes a new one.
        rmSync(file, { force: true });
        throw err;
      }
      key = readFileSync(file, 'utf8').trim();
    }
  }
  keys.add(key, file);
  const keyId = keys.keyIds()[0]!;
  return { keys, source: 'generated-file', generated: { path: file, created, keyId, ...(created ? { key } : {}) }, warnings: fileWarnings(file) };
}
