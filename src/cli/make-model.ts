/** `decide make-model --preset NAME --out DIR [--seed N] [--dtype fp32|fp16|int8] [--no-agreement] [--attention ops|fused] [--causal-states on|off] [--own-kernels on|off] [--segment-ids on|off] [--force]` */
import path from 'node:path';

import { makeModel, PRESETS } from '../models/builder/index.js';
import { MAKE_MODEL_TERMS, insideModelProblem, ModelOutputError } from '../models/output-dir.js';
import { newModelIdProblem } from '../models/registry.js';
import { commandError, parseCommand } from './args.js';
import { GRAPH_OPTIONS, graphChoice, presetProblem } from './graph-options.js';
import { Int8CheckError, removeLeftoverTwins, reportInt8Agreement } from './int8-check.js';
import { removeStagingOnSignal } from './interrupt-cleanup.js';

const HELP = `usage: decide make-model --preset NAME --out DIR [--seed N] [--dtype fp32|fp16|int8] [--no-agreement] [--attention ops|fused] [--causal-states on|off] [--own-kernels on|off] [--segment-ids on|off] [--force]

Writes a Hugging Face model directory (config.json, tokenizer files, onnx/model.onnx) holding a
Qwen3-style decoder with deterministic RANDOM weights. Presets: ${Object.keys(PRESETS).join(', ')}.
--dtype int8 stores the projection, MLP and LM-head weights as int8 with scales (computed in fp32 by
ONNX Runtime's int8 kernels) and prints their agreement with the fp32 twin on generated prompts
(--no-agreement skips that check; docs/models.md, int8 weights).
--attention fused writes the layers from ONNX Runtime's fused contrib ops (SkipSimplifiedLayerNormalization,
RotaryEmbedding) and ONNX's Attention: 14-20 nodes per layer for a GPU to launch, the same weights,
inputs, outputs and results (docs/models.md). The nodes per layer are printed and kept in
decision.json. A CUDA engine runs the fused graph of an ops model anyway
(derived once beside it: --fused-attention), so fused here only saves that step.
--causal-states on (with --attention fused) runs each state's own tokens through a causal kernel
without a mask in passes without a past, and only its questions through the masked one: the same
answers, less attention computed (docs/models.md). Off by default here; a CUDA engine derives its
fused graph with it (measured faster on an H200).
--own-kernels on (with --attention fused) writes the engine's own operators where a layer has what
they fuse: the q and k norms with rotary in one HeadNormRotary, SiLU(gate) * up in one SiluMul (12
nodes per Qwen3 layer instead of 20), each one pass over memory; the graph then runs only in this
engine (CPU, and CUDA with NVRTC; docs/models.md). Off by default: not yet measured on a GPU.
--segment-ids on (default) adds the decide_segment_ids input, with which the engine can pack a
state's questions into rows instead of forking its KV into each (the engine option --pack-suffixes,
on by default on CUDA); off writes the graph without it (docs/models.md). --packing is its old name.
An existing --out is refused unless --force is given and it is a model that make-model or
import-model wrote under an undated id; a dated id (NAME-YYYY-MM) is a pinned version and is never
replaced, and nothing else is ever deleted: --force refuses a model directory that holds files
decide did not write (a notes file, a checkpoint) and names them; move them out first.
`;

const OPTIONS = {
  preset: { type: 'string' },
  out: { type: 'string' },
  seed: { type: 'string', default: '1' },
  ...GRAPH_OPTIONS,
} as const;

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand('make-model', argv, HELP, OPTIONS);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  if (!values.preset || !values.out) {
    const want = [values.preset ? '' : '--preset', values.out ? '' : values.out === '' ? '--out (a folder, got an empty value)' : '--out'].filter(Boolean).join(' and ');
    return commandError('make-model', `give ${want}\n\n${HELP}`);
  }
  // Usage errors exit 2 with the command's message, as every command's do.
  const seed = Number(values.seed);
  if (!/^\d+$/.test(values.seed) || !Number.isSafeInteger(seed)) return commandError('make-model', `--seed must be a non-negative integer, got '${values.seed}'`);
  const graph = graphChoice('make-model', values);
  if (typeof graph === 'number') return graph;
  const { dtype } = graph;
  const presetWrong = presetProblem(values.preset);
  if (presetWrong) return commandError('make-model', presetWrong);
  const started = Date.now();
  const features = {
    ...(graph.attention === 'fused' ? { attention: 'fused' as const } : {}),
    ...(graph.causalStates ? { causalStates: true } : {}),
    ...(graph.ownKernels ? { ownKernels: true } : {}),
    ...(graph.segmentIds ? { segmentIds: true } : {}),
  };
  const out = path.resolve(values.out);
  const idProblem = newModelIdProblem(path.dirname(out), path.basename(out));
  if (idProblem) return commandError('make-model', `--out ${values.out}: the directory's name is its model id: ${idProblem}`, 1);
  const nested = insideModelProblem(out, MAKE_MODEL_TERMS);
  if (nested) return commandError('make-model', nested, 1);
  await removeLeftoverTwins();
  const preset = values.preset;
  // int8: measured against its fp32 twin before it is put in place, so a check that cannot run
  // leaves nothing at --out.
  const checkInt8 =
    dtype === 'int8' && !values['no-agreement']
      ? async (staged: string) => {
          await reportInt8Agreement('make-model', staged, async (twin) => {
            await makeModel({ preset, outDir: twin, seed, dtype: 'fp32', features });
          });
        }
      : undefined;
  let result;
  const signalsHandled = removeStagingOnSignal(out, 'make-model');
  try {
    result = await makeModel({ preset, outDir: values.out, seed, dtype, features, force: values.force, ...(checkInt8 ? { beforePlacing: checkInt8 } : {}) });
  } catch (err) {
    if (err instanceof ModelOutputError) return commandError('make-model', err.inTermsOf(MAKE_MODEL_TERMS), 1);
    if (err instanceof Int8CheckError) return commandError('make-model', err.message, 1);
    throw err;
  } finally {
    signalsHandled();
  }
  process.stdout.write(
    `wrote ${result.dir} (preset ${values.preset}, seed ${seed}, ${dtype}, ${graph.attention} graph, ${result.nodesPerLayer} nodes per layer) in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
  return 0;
}
