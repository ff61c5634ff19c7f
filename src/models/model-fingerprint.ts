/**
 * A model version's content fingerprint: what tells two copies of one dated id apart (another
 * host's copy, a directory replaced under the same id) without reading its weights. A Postgres
 * batch job records its model's fingerprint when it is created, and a worker whose copy has
 * another one leaves the job's chunks to workers whose copy matches (pg/chunk-worker.ts).
 *
 * What it covers, as SHA-256 over the directory's files in name order:
 *   - every file under onnx/ (the graph and its weight files) by name and byte size only, so
 *     gigabytes of weights are never read; a rebuilt graph of the same size is not told apart;
 *   - every other file (decision.json with its labels and calibration, config.json, the tokenizer
 *     and chat-template files) by name and content; one over 64 MiB by name and size;
 *   - not: hidden files (`.decide-files`), and the caches the engine derives beside the graph on
 *     each host (isDerivedFile: the LM-head rewrite, the int8 graph, the fused graph), which follow
 *     from the graph.
 * The result is `sha256:` and 16 hex digits, cached per directory until a file's size or mtime changes.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

import { isDerivedFile } from '../engine/derived-graph-cache.js';
import { directorySignature } from './model-completeness.js';

/** Files above this are fingerprinted by name and size, like weights. */
const MAX_HASHED_FILE_BYTES = 64 * 2 ** 20;
/** The folder of the graph and its weights. */
const WEIGHTS_FOLDER = 'onnx';

const cache = new Map<string, { signature: string; fingerprint: string }>();

/** The fingerprint of the model version in `dir` (see the header). */
export function modelFingerprint(dir: string): string {
  const signature = directorySignature(dir);
  const cached = cache.get(dir);
  if (cached && cached.signature === signature) return cached.fingerprint;
  const hash = createHash('sha256');
  const walk = (sub: string) => {
    for (const name of readdirSync(path.join(dir, sub)).sort()) {
      if (name.startsWith('.') || isDerivedFile(name)) continue;
      const rel = sub ? `${sub}/${name}` : name;
      const file = path.join(dir, rel);
      const st = statSync(file);
      if (st.isDirectory()) {
        if (!sub) walk(rel);
        continue;
      }
      if (!st.isFile()) continue;
      if (sub === WEIGHTS_FOLDER || st.size > MAX_HASHED_FILE_BYTES) {
        hash.update(`${rel}\0size ${st.size}\0`);
      } else {
        const bytes = readFileSync(file);
        hash.update(`${rel}\0bytes ${bytes.length}\0`).update(bytes);
      }
    }
  };
  walk('');
  const fingerprint = `sha256:${hash.digest('hex').slice(0, 16)}`;
  cache.set(dir, { signature, fingerprint });
  return fingerprint;
}
