/**
 * Model registry: model ids are directory names under the models directory. A dated id
 * (`svc-alpha-2026-10`, or with a day `svc-alpha-2026-11-22` as `decide calibrate` writes) pins
 * one version; its undated alias (`svc-alpha`) resolves to the newest dated version installed
 * (dates compare as text, so a day-dated id is newer than its month's plain id). Responses always name the resolved dated id. The directory is re-read
 * on every resolve of an unknown id, so a model installed while the service runs is found.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

import { EngineError } from '../errors/engine-error.js';

const DATED_ID = /^(.+?)-(\d{4})-(\d{2})(?:-(\d{2}))?$/;
const VALID_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Whether `id` can name a model directory (what rescan() accepts). */
export function isValidModelId(id: string): boolean {
  return VALID_ID.test(id) && !id.includes('.tmp-');
}

/** The undated alias and the date of a dated id ('svc-alpha-2026-11-22' -> svc-alpha, 2026-11-22). */
export function parseDatedId(id: string): { alias: string; version: string } | undefined {
  const dated = DATED_ID.exec(id);
  if (!dated) return undefined;
  return { alias: dated[1]!, version: dated[4] ? `${dated[2]}-${dated[3]}-${dated[4]}` : `${dated[2]}-${dated[3]}` };
}

export interface InstalledModel {
  id: string;
  dir: string;
  /** The undated alias this id answers to, when the id is dated. */
  alias?: string;
  /** 'YYYY-MM' or 'YYYY-MM-DD' of a dated id. */
  version?: string;
}

export class ModelRegistry {
  private installed = new Map<string, InstalledModel>();

  constructor(readonly modelsDir: string) {
    this.rescan();
  }

  /** Re-reads the models directory. A model is a directory holding config.json. */
  rescan(): void {
    const found = new Map<string, InstalledModel>();
    if (existsSync(this.modelsDir)) {
      for (const name of readdirSync(this.modelsDir).sort()) {
        const dir = path.join(this.modelsDir, name);
        if (!VALID_ID.test(name) || name.includes('.tmp-')) continue;
        if (!statSync(dir).isDirectory() || !existsSync(path.join(dir, 'config.json'))) continue;
        const dated = parseDatedId(name);
        found.set(name, dated ? { id: name, dir, ...dated } : { id: name, dir });
      }
    }
    this.installed = found;
  }

  /** Installed models, ids sorted. */
  list(): InstalledModel[] {
    return [...this.installed.values()].sort((a, b) => a.id.localeCompare(b.id));
  }

  /** The aliases with the dated id each resolves to now. */
  aliases(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const model of this.list()) {
      if (!model.alias) continue;
      const current = out[model.alias];
      if (!current || this.installed.get(current)!.version! < model.version!) out[model.alias] = model.id;
    }
    return out;
  }

  /** Resolves an id or alias to an installed model, or throws ERR_MODEL_NOT_FOUND listing what is installed. */
  resolve(id: string): InstalledModel {
    const hit = this.lookup(id);
    if (hit) return hit;
    this.rescan();
    const again = this.lookup(id);
    if (again) return again;
    const ids = this.list().map((m) => m.id);
    const aliases = Object.keys(this.aliases());
    const known = [...aliases, ...ids];
    throw new EngineError(
      'ERR_MODEL_NOT_FOUND',
      `model '${id.slice(0, 200)}' is not installed; installed: ${known.length ? known.join(', ') : '(none)'}`,
    );
  }

  private lookup(id: string): InstalledModel | undefined {
    const exact = this.installed.get(id);
    if (exact) return exact;
    const dated = this.aliases()[id];
    return dated ? this.installed.get(dated) : undefined;
  }
}
