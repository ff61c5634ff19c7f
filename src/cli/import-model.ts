/** `decide import-model HF_DIR --out DIR [--dtype fp32|fp16|int8] [--no-agreement] [--attention ops|fused] [--causal-states on|off] [--own-kernels on|off] [--segment-ids on|off] [--id NAME] [--force]` */
import path from 'node:path';

import { ImportError, importModel } from '../models/import/import-model.js';
import { bf16Unsupported } from '../models/import/import-model-options.js';
import { IMPORT_MODEL_TERMS, insideModelProblem, ModelOutputError } from '../models/output-dir.js';
import { modelIdProblem } from '../models/registry.js';
import { commandError, parseCommand } from './args.js';
import { GRAPH_OPTIONS, graphChoice } from './graph-options.js';
import { formatDuration } from './progress.js';
import { removeLeftoverTwins, reportInt8Agreement } from './int8-check.js';
import { removeStagingOnSignal } from './interrupt-cleanup.js';

const HELP = `usage: decide import-model HF_DIR --out DIR [--dtype fp32|fp16|int8] [--no-agreement] [--attention ops|fused] [--causal-states on|off] [--own-kernels on|off] [--segment-ids on|off] [--id NAME] [--force]

Converts a Hugging Face checkpoint folder (config.json, *.safetensors or a sharded
model.safetensors.index.json, tokenizer.json, tokenizer_config.json) into a model directory the
service serves. Families: qwen3, qwen2 (Qwen2/2.5), llama (incl. Llama 3.x rope scaling), mistral,
gemma. No Python and no network needed.

  --out DIR     the model directory to write (its name is the model id, e.g. models/qwen3-0.6b-2026-11);
                with --id, the models directory to write NAME into
  --id NAME     the model id: writes DIR/NAME
  --dtype T     fp32 (default; exact for bf16 checkpoints), fp16 (half the size) or int8 (projection,
                MLP and LM-head weights as 8-bit integers with scales: smaller files, faster on CPUs
                with VNNI, about as fast as fp32 on CPUs without it).
                bf16 is refused: ONNX Runtime's CPU provider cannot run a bf16 graph
  --no-agreement  with --dtype int8, skip the check that imports the fp32 twin to a temporary
                directory and prints how far the int8 model's answers are from it on generated
                prompts (quantization error depends on the checkpoint: run it before serving).
                It runs before the model is put in place: if it cannot run, nothing is written
  --attention A ops (default: standard ONNX ops) or fused (ONNX Runtime's fused contrib ops:
                SkipSimplifiedLayerNormalization, RotaryEmbedding, ONNX's Attention;
                14-20 nodes per layer for a GPU to launch; same inputs,
                outputs and results; docs/models.md). A CUDA engine runs the fused graph of an
                ops model anyway (derived once beside it: --fused-attention), so fused here only
                saves that step
  --causal-states on|off
                on (with --attention fused): each state's own tokens through a causal kernel
                without a mask in passes without a past, only its questions through the masked
                one; the same answers (docs/models.md). Off by default here; a CUDA engine
                derives its fused graph with it (measured faster on an H200)
  --own-kernels on|off
                on (with --attention fused): the engine's own operators where a layer has what
                they fuse (the q and k norms with rotary in one HeadNormRotary, SiLU(gate) * up in
                one SiluMul: 12 nodes per Qwen3 layer instead of 20); the graph then runs only in
                this engine (CPU, and CUDA with NVRTC; docs/models.md). Off by default: not yet
                measured on a GPU
  --segment-ids on|off
                on (default): the graph takes segment ids, with which the engine can pack a
                state's questions into rows instead of forking its KV into each (the engine
                option --pack-suffixes, on by default on CUDA); off: the graph without that
                input. --packing is its old name
  --force       replace a model directory that import-model or make-model wrote (two renames:
                the old one aside, the new one in; for an instant neither is there);
                a dated id (NAME-YYYY-MM) is pinned and never replaced, and nothing else is
                ever deleted (the input checkpoint least of all): a model directory holding
                files decide did not write (a notes file, a checkpoint) is refused, naming them

Nothing is written when the checkpoint cannot be imported; the directory appears complete or not at all.
See docs/models.md.
`;

const OPTIONS = {
  out: { type: 'string' },
  id: { type: 'string' },
  ...GRAPH_OPTIONS,
} as const;

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand('import-model', argv, HELP, OPTIONS, true);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  if (positionals.length !== 1 || !values.out) {
    const missing = positionals.length > 1 ? `one HF_DIR, got ${positionals.length}` : positionals.length === 0 ? 'HF_DIR (the checkpoint folder)' : '';
    const want = [missing, values.out ? '' : values.out === '' ? '--out (a folder, got an empty value)' : '--out'].filter(Boolean).join(' and ');
    return commandError('import-model', `give ${want}\n\n${HELP}`);
  }
  // The id's own rules (a usage error, exit 2, whatever the character); the one that depends on
  // the models directory (an alias of dated versions there) is the import's to say.
  const idProblem = values.id === undefined ? undefined : modelIdProblem(values.id, []);
  if (idProblem) return commandError('import-model', `--id: ${idProblem}`);
  // Usage errors exit 2, as every command's do; a checkpoint that cannot be imported exits 1.
  // A bf16 checkpoint's user asks for bf16 output: say why not and what to use instead.
  if (values.dtype === 'bf16') return commandError('import-model', bf16Unsupported((d) => `--dtype ${d}`));
  const graph = graphChoice('import-model', values);
  if (typeof graph === 'number') return graph;
  const { dtype, attention, causalStates, ownKernels, segmentIds } = graph;
  const outDir = values.id ? path.join(values.out, values.id) : values.out;
  const nested = insideModelProblem(path.resolve(outDir), IMPORT_MODEL_TERMS);
  if (nested) return commandError('import-model', `cannot import ${positionals[0]}: ${nested}`, 1);
  const started = Date.now();
  const progress = new WeightProgress();
  await removeLeftoverTwins();
  const hfDir = positionals[0]!;
  // int8: measured against its fp32 twin before it is put in place, so a check that cannot run
  // leaves nothing at --out (a dated id would then refuse the retry as pinned).
  const checkInt8 =
    dtype === 'int8' && !values['no-agreement']
      ? async (staged: string) => {
          progress.end();
          await reportInt8Agreement('import-model', staged, async (twin) => {
            await importModel({ hfDir, outDir: twin, dtype: 'fp32', attention, causalStates, ownKernels, segmentIds });
          });
        }
      : undefined;
  const signalsHandled = removeStagingOnSignal(outDir, 'import-model');
  try {
    const result = await importModel({
      hfDir,
      outDir,
      dtype,
      attention,
      causalStates,
      ownKernels,
      segmentIds,
      force: values.force,
      ...(checkInt8 ? { beforePlacing: checkInt8 } : {}),
      onWarning: (m) => process.stderr.write(`decide import-model: warning: ${m}\n`),
      onProgress: (done, total) => progress.update(done, total),
    });
    progress.end();
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    process.stdout.write(
      `decide import-model: wrote ${result.dir} (${result.plan.family}, ${(result.parameters / 1e6).toFixed(1)}M parameters, ${result.dtype}` +
        `, ${attention} graph, ${result.nodesPerLayer} nodes per layer${result.hasTokenizer ? '' : ', NO tokenizer'}) in ${secs} s\n`,
    );
    return 0;
  } catch (err) {
    if (err instanceof ImportError) {
      const why = err.cause instanceof ModelOutputError ? err.cause.inTermsOf(IMPORT_MODEL_TERMS) : err.message;
      return commandError('import-model', `cannot import ${positionals[0]}: ${why}`, 1);
    }
    throw err;
  } finally {
    signalsHandled();
  }
}

/**
 * Progress of the weight writing on stderr: redrawn in place every 5% on a terminal; on anything
 * else (a log, CI) one plain line per 10%, so a long import shows it is alive without flooding the log.
 */
class WeightProgress {
  private readonly tty = Boolean(process.stderr.isTTY);
  private readonly started = Date.now();
  private shown = 0;
  /** end() may come twice (before the int8 check, and after the model is placed). */
  private ended = false;

  update(done: number, total: number): void {
    const pct = Math.floor((100 * done) / total);
    const step = this.tty ? 5 : 10;
    if (pct < this.shown + step) return;
    this.shown = pct - (pct % step);
    // Weight values the graph holds: a tied LM head is written a second time, so this can exceed the
    // model's parameter count (the summary line's).
    const params = `${(total / 1e6).toFixed(total < 1e7 ? 1 : 0)}M weight values`;
    if (this.tty) {
      process.stderr.write(`\r  ${pct}% of ${params}`);
      return;
    }
    const elapsed = (Date.now() - this.started) / 1000;
    const eta = done > 0 && done < total ? `, ETA ${formatDuration((elapsed * (total - done)) / done)}` : '';
    process.stderr.write(`decide import-model: weights ${this.shown}% of ${params} written${eta}\n`);
  }

  end(): void {
    if (this.tty && this.shown > 0 && !this.ended) process.stderr.write('\n');
    this.ended = true;
  }
}
