/**
 * The model list in TypeSafe System One's form (`{models: [{name, description, release_date}]}`,
 * its GET /v1/models), served beside ours in the same body so that its clients can list models:
 * every alias (what the vendor lists), then every dated id that loads (a client may pin one).
 */
import { statSync } from 'node:fs';

import type { ModelListing } from '../api/schemas.js';
import type { InstalledModel } from '../models/registry.js';

/**
 * YYYY-MM-DD of a dated id's version (YYYY-MM: the first of the month), else the day its directory
 * last changed: System One's release_date, and (as Unix seconds) OpenAI's `created` in our listing.
 */
export function releaseDate(model: InstalledModel): string {
  if (model.version) return model.version.length === 7 ? `${model.version}-01` : model.version;
  try {
    return statSync(model.dir).mtime.toISOString().slice(0, 10);
  } catch {
    return new Date().toISOString().slice(0, 10);
  }
}

export function systemOneModels(installed: readonly InstalledModel[], aliases: Readonly<Record<string, string>>): ModelListing['models'] {
  const byId = new Map(installed.map((m) => [m.id, m]));
  const listed: ModelListing['models'] = [];
  for (const [alias, id] of Object.entries(aliases)) {
    const target = byId.get(id);
    if (target) listed.push({ name: alias, description: `the newest installed version of ${alias}: ${id}`, release_date: releaseDate(target) });
  }
  for (const m of installed) {
    if (m.broken) continue;
    listed.push({ name: m.id, description: m.alias ? `version ${m.version} of ${m.alias}` : `model ${m.id}`, release_date: releaseDate(m) });
  }
  return listed;
}
