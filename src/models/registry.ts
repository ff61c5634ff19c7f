/**
 * Model registry: model ids are directory names under the models directory. A dated id
 * (`svc-alpha-2026-10`, or with a day `svc-alpha-2026-11-22` as `decide calibrate` writes) pins
 * one version; its undated alias (`svc-alpha`) resolves to the newest dated version installed
 * that is not broken (dates compare as text, so a day-dated id is newer than its month's plain
 * id). Responses always name the resolved dated id.
 *
 * A version installed while the service runs (`decide calibrate`, `import-model`, a copy) is seen
 * by the next resolve, so /v1/decide, GET /v1/models/{id} and the listing give one answer as soon
 * as it is complete: every resolve first checks, with one stat, whether the models directory
 * changed since the last scan (its mtime moves when an entry is added, removed or renamed), and
 * rescans when it did. Two cases a directory mtime cannot show are checked too: a scan taken within
 * the file system's timestamp granularity of a change (rescanned until a scan is clearly later),
 * and a version that was still incomplete (its own files are compared until it is whole).
 *
 * Only complete model directories are seen (model-completeness.ts): a version being copied in file
 * by file stays invisible until its last file is whole. A version that is complete but fails to
 * load is marked broken (markBroken): it stays listed with its error, and its alias keeps pointing
 * at the newest version that is not broken. A broken version is tried again once its files change.
 * Names starting with '.' are ignored, so copying to `models/.NAME` and renaming is atomic.
 */
import { existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';

import { EngineError } from '../errors/engine-error.js';
import { directorySignature, incompleteReason, knownLoadProblem } from './model-completeness.js';
import { statIfExists } from '../support/stat-if-exists.js';

const DATED_ID = /^(.+?)-(\d{4})-(\d{2})(?:-(\d{2}))?$/;
const VALID_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Whether year-month(-day) names a day (or month) of the calendar. */
function isRealDate(year: number, month: number, day: number | undefined): boolean {
  if (month < 1 || month > 12) return false;
  if (day === undefined) return true;
  return day >= 1 && day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** Whether `id` can name a model directory (what rescan() accepts). */
export function isValidModelId(id: string): boolean {
  return VALID_ID.test(id) && !id.includes('.tmp-');
}

/**
 * Why `id` cannot name a new model beside the directories `names` (a models directory's entries),
 * or undefined. The one rule every writer (calibrate, import-model, make-model) applies, and the
 * registry applies to what it finds: an undated id is never the alias of dated versions. An
 * undated `svc-alpha` next to `svc-alpha-2026-10` would take the alias's requests by exact match
 * while GET /v1/models lists the alias as the dated version, so the two would disagree.
 */
export function modelIdProblem(id: string, names: readonly string[]): string | undefined {
  if (!isValidModelId(id)) return `'${id.slice(0, 200)}' is not a valid model id (letters, digits, '.', '_', '-', starting with a letter or digit; at most 128 characters)`;
  if (DATED_ID.test(id) && parseDatedId(id) === undefined) {
    return `'${id}' ends in a date that does not exist (a version is -YYYY-MM or -YYYY-MM-DD, a real month and day)`;
  }
  const dated = parseDatedId(id);
  if (dated === undefined) {
    const versions = names.filter((n) => isValidModelId(n) && parseDatedId(n)?.alias === id);
    if (versions.length > 0) {
      return `'${id}' is the alias of the dated version(s) ${versions.sort().join(', ')}: an undated model of that name would take the alias's requests. Give it a dated id (e.g. ${id}-YYYY-MM) or another name`;
    }
  } else if (names.includes(dated.alias)) {
    return `the alias of '${id}' is '${dated.alias}', which is already an undated model in the same directory; rename that model first, or give this one another name`;
  }
  return undefined;
}

/** modelIdProblem for a new model `id` in `modelsDir` (which need not exist yet). */
export function newModelIdProblem(modelsDir: string, id: string): string | undefined {
  let names: string[] = [];
  try {
    names = readdirSync(modelsDir);
  } catch {
    // not there yet: nothing to clash with
  }
  return modelIdProblem(id, names);
}

/**
 * The undated alias and the date of a dated id ('svc-alpha-2026-11-22' -> svc-alpha, 2026-11-22);
 * undefined for an id that ends in no date, or in one that does not exist ('-2026-13',
 * '-2026-02-30'): versions are ordered by their dates, and an impossible one would rank anywhere.
 */
export function parseDatedId(id: string): { alias: string; version: string } | undefined {
  const dated = DATED_ID.exec(id);
  if (!dated || !isRealDate(Number(dated[2]), Number(dated[3]), dated[4] === undefined ? undefined : Number(dated[4]))) return undefined;
  return { alias: dated[1]!, version: dated[4] ? `${dated[2]}-${dated[3]}-${dated[4]}` : `${dated[2]}-${dated[3]}` };
}

export interface InstalledModel {
  id: string;
  dir: string;
  /** The undated alias this id answers to, when the id is dated. */
  alias?: string;
  /** 'YYYY-MM' or 'YYYY-MM-DD' of a dated id. */
  version?: string;
  /** Why loading this version failed; set while its files stay as they were. */
  broken?: string;
}

export interface ModelRegistryOptions {
  /** Where skipped (incomplete) directories are reported, once per change of their files. */
  log?: (message: string) => void;
}

/**
 * A scan that started less than this long after the directory's mtime may have missed a change
 * made in the same timestamp tick (file system timestamps are coarse: a jiffy, or seconds on some
 * file systems); such a scan is repeated at the next resolve.
 */
const RACY_SCAN_MS = 2000;

export class ModelRegistry {
  private installed = new Map<string, InstalledModel>();
  /** What the last scan saw of the models directory itself; undefined: rescan at the next resolve. */
  private scanned: { mtimeNs: bigint; ino: bigint } | undefined;
  /** Incomplete directories seen by the last scan, with their signature then. */
  private readonly incomplete = new Map<string, string>();
  /** Broken versions seen by the last scan, with their signature then: mended inside their own directory. */
  private readonly brokenSeen = new Map<string, string>();
  /** Versions that failed to load, with the directory signature at the time. */
  private readonly brokenVersions = new Map<string, { error: string; signature: string }>();
  /** The last reason logged per skipped directory, so a copy in progress is logged once per change. */
  private readonly reported = new Map<string, string>();

  constructor(
    readonly modelsDir: string,
    private readonly options: ModelRegistryOptions = {},
  ) {
    this.rescan();
  }

  /** Re-reads the models directory. A model is a complete model directory (see model-completeness.ts). */
  rescan(): void {
    const found = new Map<string, InstalledModel>();
    // Stat before reading: a change after this stat is in the listing or moves the mtime again.
    const started = Date.now();
    const dirStat = statIfExists(this.modelsDir, { bigint: true });
    this.scanned = dirStat && started - Number(dirStat.mtimeMs) > RACY_SCAN_MS ? { mtimeNs: dirStat.mtimeNs, ino: dirStat.ino } : undefined;
    this.incomplete.clear();
    this.brokenSeen.clear();
    if (existsSync(this.modelsDir)) {
      for (const name of readdirSync(this.modelsDir).sort()) {
        const dir = path.join(this.modelsDir, name);
        if (!VALID_ID.test(name) || name.includes('.tmp-')) continue;
        try {
          if (!statSync(dir).isDirectory()) continue;
        } catch {
          continue; // removed while we looked
        }
        const incomplete = incompleteReason(dir);
        if (incomplete) {
          this.incomplete.set(name, directorySignature(dir));
          if (this.reported.get(name) !== incomplete) this.options.log?.(`models: skipping ${name}: ${incomplete}`);
          this.reported.set(name, incomplete);
          continue;
        }
        this.reported.delete(name);
        const dated = parseDatedId(name);
        const model: InstalledModel = dated ? { id: name, dir, ...dated } : { id: name, dir };
        const broken = this.brokenVersions.get(name);
        if (broken && broken.signature !== directorySignature(dir)) this.brokenVersions.delete(name);
        else if (broken) model.broken = broken.error;
        model.broken ??= knownLoadProblem(dir);
        // A broken version is mended inside its own directory (a tokenizer added), which the models
        // directory's mtime does not show: watch its files as an incomplete one's. It is listed
        // once, as broken, not also as incomplete.
        if (model.broken) this.brokenSeen.set(name, directorySignature(dir));
        found.set(name, model);
      }
    }
    // An undated directory named like an alias (modelIdProblem) is not served: the alias means the
    // dated versions everywhere, in routing and in the listing alike.
    const aliases = new Set([...found.values()].flatMap((m) => (m.alias ? [m.alias] : [])));
    for (const name of aliases) {
      if (!found.has(name)) continue;
      found.delete(name);
      const why = `its name is the alias of dated versions; rename it (e.g. ${name}-YYYY-MM) to serve it`;
      if (this.reported.get(name) !== why) this.options.log?.(`models: skipping ${name}: ${why}`);
      this.reported.set(name, why);
    }
    this.installed = found;
  }

  /**
   * Records that a version failed to load: its alias moves back to the newest version that is not
   * broken, until the version's files change.
   */
  markBroken(id: string, error: string): void {
    const model = this.installed.get(id);
    if (!model) return;
    this.brokenVersions.set(id, { error, signature: directorySignature(model.dir) });
    model.broken = error;
    this.options.log?.(`models: ${id} cannot be loaded and is marked broken: ${error}`);
  }

  /**
   * Directories the last scan skipped as incomplete, with the reason (ids sorted); paths in the
   * reason are relative to the models directory (shownText).
   */
  incompleteDirs(): Array<{ id: string; reason: string }> {
    return [...this.incomplete.keys()].sort().map((id) => ({ id, reason: this.shownText(this.reported.get(id) ?? 'incomplete') }));
  }

  /**
   * A reason or load error as API clients see it: the models directory's absolute path (as given,
   * and as the system resolves it) left out, so `/srv/decide/models/x-2026-10/config.json` reads
   * `x-2026-10/config.json`. The server's log keeps the whole path.
   */
  shownText(text: string): string {
    let shown = text;
    for (const dir of this.modelsDirSpellings()) shown = shown.split(`${dir}${path.sep}`).join('');
    return shown;
  }

  private modelsDirSpellings(): string[] {
    const given = path.resolve(this.modelsDir);
    let real = given;
    try {
      real = realpathSync(given);
    } catch {
      // gone: the given spelling is all there is
    }
    // The longer spelling first, so that neither leaves a piece of the other behind.
    return [...new Set([given, real])].sort((a, b) => b.length - a.length);
  }

  /**
   * Installed models, ids sorted by code point ('Ix' before 'hx' before 'ix'): not by the host's
   * locale (localeCompare), whose order differs between hosts (tr_TR puts 'Ix' before 'ix', C
   * after), so that every host of a deployment lists them alike.
   */
  list(): InstalledModel[] {
    return [...this.installed.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** The aliases with the dated id each resolves to now: the newest version that is not broken. */
  aliases(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const model of this.list()) {
      if (!model.alias || model.broken) continue;
      const current = out[model.alias];
      if (!current || this.installed.get(current)!.version! < model.version!) out[model.alias] = model.id;
    }
    return out;
  }

  /** Resolves an id or alias to an installed model, or throws ERR_MODEL_NOT_FOUND listing what is installed. */
  resolve(id: string): InstalledModel {
    if (this.mayHaveChanged()) this.rescan();
    const hit = this.lookup(id);
    if (hit) return hit;
    this.rescan();
    const again = this.lookup(id);
    if (again) return again;
    const versions = this.list().filter((m) => m.alias === id);
    if (versions.length > 0) {
      throw new EngineError(
        'ERR_MODEL_LOAD',
        `no version of '${id}' can be loaded: ${versions.map((m) => `${m.id} (${m.broken})`).join(', ')}`,
      );
    }
    const ids = this.list().map((m) => m.id);
    const aliases = Object.keys(this.aliases());
    const known = [...aliases, ...ids];
    throw new EngineError(
      'ERR_MODEL_NOT_FOUND',
      `model '${id.slice(0, 200)}' is not installed; installed: ${known.length ? known.join(', ') : '(none)'}`,
    );
  }

  /**
   * The model an id or alias names, for display (GET /v1/models/{id}): as resolve(), except that an
   * alias whose versions are all broken names its newest version, broken with its reason, instead
   * of failing. A metadata route reports what is wrong with a model; it does not fail itself.
   */
  describe(id: string): InstalledModel {
    try {
      return this.resolve(id);
    } catch (err) {
      const versions = this.list().filter((m) => m.alias === id);
      if (versions.length === 0) throw err;
      return versions.reduce((newest, m) => (m.version! > newest.version! ? m : newest));
    }
  }

  /** Whether the models directory may hold something the last scan did not see (one stat when it does not). */
  private mayHaveChanged(): boolean {
    if (!this.scanned) return true;
    const now = statIfExists(this.modelsDir, { bigint: true });
    if (!now || now.mtimeNs !== this.scanned.mtimeNs || now.ino !== this.scanned.ino) return true;
    for (const [name, signature] of [...this.incomplete, ...this.brokenSeen]) {
      if (directorySignature(path.join(this.modelsDir, name)) !== signature) return true;
    }
    return false;
  }

  private lookup(id: string): InstalledModel | undefined {
    const exact = this.installed.get(id);
    if (exact) return exact;
    const dated = this.aliases()[id];
    return dated ? this.installed.get(dated) : undefined;
  }
}
