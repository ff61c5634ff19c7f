/**
 * `decide <command>`: one command with subcommands. Each subcommand lives in its own file and is
 * imported only when used, so `decide make-model` does not load the HTTP server and vice versa.
 */
import { commandError } from './args.js';
import { dropOutputWhenReaderCloses } from './closed-output.js';

const COMMANDS: Record<string, { summary: string; load: () => Promise<{ run(argv: string[]): Promise<number> }> }> = {
  serve: { summary: 'run the HTTP API (/v1/decide, /v1/systemone, /v1/decisions, /v1/batches, /v1/files, /v1/models) and the web console (/console)', load: () => import('./serve.js') },
  worker: { summary: 'work on batch chunks from the Postgres batch store (DECIDE_DATABASE_URL); no HTTP', load: () => import('./worker.js') },
  batch: { summary: 'run a JSONL batch in-process: decide batch IN.jsonl --model ID --out OUT.jsonl', load: () => import('./batch.js') },
  calibrate: {
    summary: 'fit calibration on labelled rows into a new model version: --model ID --data FILE.jsonl',
    load: () => import('./calibrate.js'),
  },
  bench: { summary: 'benchmark the engine against the fresh-scoring baseline', load: () => import('./bench.js') },
  'gpu-report': { summary: 'everything a GPU host checks, one command, one report folder (also --provider cpu)', load: () => import('./gpu-report.js') },
  'import-model': { summary: 'convert a Hugging Face checkpoint folder: HF_DIR --out DIR [--dtype fp32|fp16|int8]', load: () => import('./import-model.js') },
  'setup-cuda': { summary: 'make --provider cuda work: ONNX Runtime for CUDA from the npm registry, and a host check', load: () => import('./setup-cuda.js') },
  'make-model': { summary: 'generate a model directory with random weights: --preset NAME --out DIR', load: () => import('./make-model.js') },
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(12)} ${c.summary}`);
  return `usage: decide <command> [options]\n\ncommands:\n${lines.join('\n')}\n\nRun decide <command> --help for its options.\n`;
}

export async function main(argv: string[]): Promise<number> {
  // `decide serve | head -2` must not stop the server when head exits (closed-output.ts).
  dropOutputWhenReaderCloses();
  const [name, ...rest] = argv;
  if (!name) {
    // No command is a usage error, on stderr as every other.
    process.stderr.write(usage());
    return 2;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`decide: unknown command '${name}'\n\n${usage()}`);
    return 2;
  }
  const module = await command.load();
  try {
    return await module.run(rest);
  } catch (err) {
    // An error no command turned into a message of its own still says which command failed, as
    // commandError does; a message that already starts with the command's name keeps it once.
    const message = err instanceof Error ? err.message : String(err);
    return commandError(name, message.startsWith(`${name}: `) ? message.slice(name.length + 2) : message, 1);
  }
}
