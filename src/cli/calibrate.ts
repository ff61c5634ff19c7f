/**
 * `decide calibrate --model ID --data FILE.jsonl [--models-dir DIR] [--as NEW_ID] [--report DIR]
 * [--seed N] [--json]`: fits a calibration on labelled rows and installs it as a new dated model
 * version (src/calibration/run.ts). The base version is never modified.
 */

import { describeError } from '../api/errors.js';
import { SEED_RANGE } from '../calibration/calibrate-options.js';
import { calibrateModel, CalibrationError, type CalibrationReport } from '../calibration/run.js';
import { commandError, intArg, parseCommand } from './args.js';
import { dirOption } from './dir-options.js';
import { folderDefaultText, MODELS_FOLDER } from '../support/env-path.js';
import { ENGINE_FLAGS, ENGINE_FLAGS_HELP, engineOptionsFromFlags } from './engine-flags.js';
import { ProgressReporter } from './progress.js';

const HELP = `usage: decide calibrate --model ID --data FILE.jsonl [options]

Scores labelled rows (as the batch path does, at batch priority; progress on stderr), fits per question type (noul, choice, score) a
temperature and a label-bias correction on a seeded 80% of the rows, keeps each only where it
improves held-out log-loss (over the base's own correction, when the base is calibrated), and installs the result as a NEW model version sharing the base's
weights. The base id keeps answering exactly as before; the undated alias moves to the new
version when its date is the newest.

Each line of FILE: {"state": ..., "questions": {...}, "expected": {"<question id>": "<option key>"}}

options:
  --model ID         model id or alias to calibrate                                (required)
  --data FILE        labelled JSONL                                                 (required)
  --as NEW_ID        id of the new version (default: <alias>-YYYY-MM-DD, today UTC; must not exist)
  --models-dir DIR   model directories (${folderDefaultText(MODELS_FOLDER)}); nothing is created
                     there: a model that is not installed is refused (exit 2)
  --report DIR       write reliability diagrams (SVG), index.html and report.json there
  --seed N           seed of the split and of the bootstrap (default 1)
  --accept-poor-fit  install a fit whose temperature ended at a bound (0.02 or 50) or whose
                     held-out log-loss is no better than uniform (refused by default)
  --json             print the whole report as one JSON object; when refused,
                     {"error": {"code", "message", "exit_code", ...}} instead
  -h, --help         this text

${ENGINE_FLAGS_HELP}`;

const OPTIONS = {
  model: { type: 'string' },
  data: { type: 'string' },
  as: { type: 'string' },
  'models-dir': { type: 'string' },
  report: { type: 'string' },
  seed: { type: 'string' },
  ...ENGINE_FLAGS,
  json: { type: 'boolean' },
  'accept-poor-fit': { type: 'boolean' },
} as const;

const f4 = (x: number) => (Number.isFinite(x) ? x.toFixed(4) : 'n/a');

function summary(report: CalibrationReport): string {
  const lines = [
    `decide calibrate: wrote ${report.model} (from ${report.base_model}) in ${report.model_dir}`,
    `  data: ${report.data.rows} rows, ${report.data.observations} labelled answers; ${report.split.fit_rows} rows fit, ${report.split.held_out_rows} held out (seed ${report.split.seed})`,
  ];
  if (report.alias) lines.push(`  alias ${report.alias.name} -> ${report.alias.resolves_to}`);
  if (report.unusable.length) {
    lines.push(`  ${report.unusable.length} expected labels left out:`);
    for (const u of report.unusable.slice(0, 5)) lines.push(`    line ${u.line}, ${u.question}: ${u.reason}`);
    if (report.unusable.length > 5) lines.push(`    ... and ${report.unusable.length - 5} more (see --json)`);
  }
  if (report.data.failed_rows.length) lines.push(`  ${report.data.failed_rows.length} rows could not be scored (first: line ${report.data.failed_rows[0]!.line}: ${report.data.failed_rows[0]!.error})`);
  for (const [type, r] of Object.entries(report.types)) {
    const bias = r.label_bias ? ' + label bias' : '';
    lines.push(`  ${type}: kept ${r.kept === 'base' ? "the base's correction" : r.kept} (temperature ${f4(r.temperature)}${bias}); ${r.fit_observations} fit / ${r.held_out_observations} held-out answers${r.not_fitted ? `; NOT FITTED: ${r.not_fitted}` : ''}`);
    if (r.poor_fit) lines.push(`    POOR FIT (installed with --accept-poor-fit): ${r.poor_fit.join('; ')}`);
    lines.push(`    ${'held out'.padEnd(10)} ${'before'.padStart(24)} ${'after'.padStart(24)} ${'uniform'.padStart(24)}`);
    for (const k of ['accuracy', 'nll', 'brier', 'ece'] as const) {
      const cell = (e: { value: number; ci: [number, number] }) => `${f4(e.value)} [${f4(e.ci[0])},${f4(e.ci[1])}]`.padStart(24);
      lines.push(`    ${k.padEnd(10)} ${cell(r[k].before)} ${cell(r[k].after)} ${cell(r[k].uniform)}`);
    }
  }
  if (report.report_files) lines.push(`  report: ${report.report_files.join(', ')}`);
  return `${lines.join('\n')}\n`;
}

/**
 * A refusal or failure: the message on stderr, and with --json also `{"error": {...}}` on stdout,
 * so a script reads the reason (and the labels, lines or types behind it) without parsing stderr.
 */
function refuse(err: CalibrationError, json: boolean | undefined): number {
  if (json) process.stdout.write(`${JSON.stringify(err.toJSON())}\n`);
  return commandError('calibrate', err.message, err.exitCode);
}

export async function run(argv: string[]): Promise<number> {
  // An unknown option or a missing value is refused before --json is parsed; the JSON refusal is
  // still owed to a script that asked for it.
  const wantsJson = argv.includes('--json');
  const parsed = parseCommand('calibrate', argv, HELP, OPTIONS, false, (message) => {
    if (wantsJson) process.stdout.write(`${JSON.stringify(new CalibrationError(message, 2, 'invalid_argument').toJSON())}\n`);
  });
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const invalid = (message: string) => refuse(new CalibrationError(message, 2, 'invalid_argument'), values.json);
  if (!values.model || !values.data) return values.json ? invalid('give --model and --data') : commandError('calibrate', `give --model and --data\n\n${HELP}`, 2);
  const seed = values.seed === undefined ? undefined : intArg(values.seed, '--seed', SEED_RANGE.min, SEED_RANGE.max);
  if (typeof seed === 'string') return invalid(seed);
  const engine = engineOptionsFromFlags(values);
  if (typeof engine === 'string') return invalid(engine);
  const models = dirOption(values['models-dir'], '--models-dir', MODELS_FOLDER);
  if ('problem' in models) return invalid(models.problem);

  let progress: ProgressReporter | undefined;
  const started = Date.now();
  try {
    const report = await calibrateModel({
      model: values.model,
      data: values.data,
      as: values.as,
      modelsDir: models.dir,
      reportDir: values.report,
      seed,
      engine,
      acceptPoorFit: values['accept-poor-fit'],
      log: (line) => process.stderr.write(`decide calibrate: ${line}\n`),
      onProgress: (done, total) => {
        progress ??= new ProgressReporter('calibrate', total, 0, undefined, undefined, started);
        progress.update(done, done === total);
        if (done === total) progress.end();
      },
    });
    process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : summary(report));
    return 0;
  } catch (err) {
    return refuse(err instanceof CalibrationError ? err : new CalibrationError(describeError(err), 1, 'failed'), values.json);
  }
}
