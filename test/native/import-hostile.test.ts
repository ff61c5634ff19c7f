/**
 * Hostile and odd checkpoint folders (issue 23 items 11, 13, 14): every one ends in an ImportError
 * that names the file, quickly, with nothing written; links that leave the folder are not followed
 * into a model; copied files never get wider permissions than their source.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { writeTokenizerFiles } from '../../src/models/builder/tokenizer-files.js';
import { ImportError, importModel } from '../../src/models/import/import-model.js';
import { randomCheckpoint } from '../helpers/hf-checkpoint.js';
import { readSafetensors, writeSafetensors, type Tensor } from '../helpers/safetensors-file.js';
import { HF_TINY } from '../helpers/fixtures.js';

const FIXTURES = HF_TINY;
const QWEN3 = path.join(FIXTURES, 'qwen3');
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'import-hostile-'));
});
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const readConfig = () => JSON.parse(readFileSync(path.join(QWEN3, 'config.json'), 'utf8')) as Record<string, unknown>;

/** A copy of the qwen3 fixture, edited. */
async function checkpoint(name: string, edit: (dir: string) => Promise<void> = async () => {}): Promise<string> {
  const dir = path.join(scratch, 'hf', name);
  await cp(QWEN3, dir, { recursive: true });
  await edit(dir);
  return dir;
}

/** Imports into a fresh models dir; returns the error (or undefined) and what the models dir holds after. */
async function tryImport(dir: string, name = path.basename(dir), dtype?: 'fp32' | 'fp16'): Promise<{ err: unknown; left: string[]; out: string }> {
  const modelsDir = path.join(scratch, 'models', name);
  await mkdir(modelsDir, { recursive: true });
  const out = path.join(modelsDir, 'm');
  const err = await importModel({ hfDir: dir, outDir: out, ...(dtype ? { dtype } : {}) }).then(() => undefined, (e: unknown) => e);
  return { err, left: await readdir(modelsDir), out };
}

async function expectRefused(dir: string, message: RegExp, dtype?: 'fp32' | 'fp16'): Promise<void> {
  const { err, left } = await tryImport(dir, path.basename(dir) + (dtype ?? ''), dtype);
  expect(err).toBeInstanceOf(ImportError);
  expect((err as Error).message).toMatch(message);
  expect(left).toEqual([]);
}

/** A small Qwen3 with the Qwen3 tokenizer cut to 16,384 ids (as make-model's tiny preset writes it). */
async function withTokenizer(name: string): Promise<string> {
  const cfg = {
    ...readConfig(),
    hidden_size: 32, num_attention_heads: 2, num_key_value_heads: 1, head_dim: 16, intermediate_size: 64,
    num_hidden_layers: 1, layer_types: undefined, vocab_size: 16384,
  };
  const dir = path.join(scratch, 'hf', name);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'config.json'), JSON.stringify(cfg));
  writeSafetensors(path.join(dir, 'model.safetensors'), randomCheckpoint(cfg, 4, 1), 'F32');
  await writeTokenizerFiles(dir, 16384);
  return dir;
}

describe('side files (generation_config.json, special_tokens_map.json, ...)', () => {
  it('a symbolic link that leaves the folder is refused, naming the file and the target', async () => {
    const secret = path.join(scratch, 'secret.json');
    await writeFile(secret, '{"token": "s3cret"}', { mode: 0o600 });
    const dir = await checkpoint('link-out', async (d) => {
      await rm(path.join(d, 'generation_config.json'));
      await symlink(secret, path.join(d, 'generation_config.json'));
    });
    await expectRefused(dir, /^generation_config\.json: a symbolic link to .*secret\.json, outside the checkpoint folder/);
  });

  it('a link inside the folder is followed; a 0600 source stays 0600 in the model', async () => {
    const dir = await checkpoint('link-in', async (d) => {
      await mkdir(path.join(d, 'real'));
      await writeFile(path.join(d, 'real', 'special_tokens_map.json'), '{"eos_token": "<|im_end|>"}', { mode: 0o600 });
      await chmod(path.join(d, 'real', 'special_tokens_map.json'), 0o600);
      await symlink(path.join('real', 'special_tokens_map.json'), path.join(d, 'special_tokens_map.json'));
      await chmod(path.join(d, 'generation_config.json'), 0o640);
    });
    const { err, out } = await tryImport(dir);
    expect(err).toBeUndefined();
    expect(JSON.parse(await readFile(path.join(out, 'special_tokens_map.json'), 'utf8'))).toEqual({ eos_token: '<|im_end|>' });
    expect((await stat(path.join(out, 'special_tokens_map.json'))).mode & 0o777).toBe(0o600);
    expect((await stat(path.join(out, 'generation_config.json'))).mode & 0o077).toBe(0o040 & ~process.umask());
  });

  it('a checkpoint whose weights are 0600 makes a model that is 0600 throughout (config.json, graph, weights, copies)', async () => {
    const dir = await checkpoint('private-weights', async (d) => {
      for (const f of await readdir(d)) if (f.endsWith('.safetensors')) await chmod(path.join(d, f), 0o600);
      await chmod(path.join(d, 'config.json'), 0o640);
    });
    const { err, out } = await tryImport(dir);
    expect(err).toBeUndefined();
    const files = (await readdir(out, { recursive: true })).map(String);
    expect(files).toContain(path.join('onnx', 'model.onnx'));
    for (const f of files) {
      const info = await stat(path.join(out, f));
      if (info.isFile()) expect(info.mode & 0o077, f).toBe(0);
    }
  });

  it('a tokenizer.json the tokenizer library cannot load is refused naming it, not the hidden staging copy', async () => {
    const dir = await withTokenizer('tokenizer-unknown-model');
    const tj = JSON.parse(await readFile(path.join(dir, 'tokenizer.json'), 'utf8')) as { model: Record<string, unknown> };
    tj.model = { type: 'Nope' };
    await writeFile(path.join(dir, 'tokenizer.json'), JSON.stringify(tj));
    await expectRefused(dir, /^tokenizer\.json cannot be loaded: /);
    const { err } = await tryImport(dir, 'tokenizer-unknown-model-again');
    expect((err as Error).message).not.toContain('.tmp-');
  });

  it('a JSON side file that does not parse is refused by name', async () => {
    const dir = await checkpoint('bad-json', (d) => writeFile(path.join(d, 'special_tokens_map.json'), '{"eos_token": '));
    await expectRefused(dir, /^special_tokens_map\.json: not valid JSON/);
  });

  it('tokenizer.json without tokenizer_config.json: imported without a tokenizer, with a warning naming the missing file', async () => {
    const dir = await withTokenizer('no-tokenizer-config');
    await rm(path.join(dir, 'tokenizer_config.json'));
    const modelsDir = path.join(scratch, 'models', 'no-tokenizer-config');
    const result = await importModel({ hfDir: dir, outDir: path.join(modelsDir, 'm') });
    expect(result.hasTokenizer).toBe(false);
    expect(result.warnings.join('\n')).toMatch(/no tokenizer_config\.json in .*imported without a tokenizer/);
    expect(JSON.parse(await readFile(path.join(result.dir, 'decision.json'), 'utf8')).import.tokenizer).toBe(false);
  });
});

describe('a folder or file that cannot be reached is named for what it is', () => {
  beforeAll(() => mkdir(path.join(scratch, 'hf'), { recursive: true }));

  it('a checkpoint folder that is a symbolic link loop: a link loop, not "does not exist"', async () => {
    const a = path.join(scratch, 'hf', 'loop-a');
    await symlink(path.join(scratch, 'hf', 'loop-b'), a);
    await symlink(a, path.join(scratch, 'hf', 'loop-b'));
    const { err, left } = await tryImport(a);
    expect((err as Error).message).toBe(`${a}: a symbolic link loop (ELOOP, stat)`);
    expect(left).toEqual([]);
  });

  it('a folder that is not there, or a link to nothing, says so', async () => {
    const gone = path.join(scratch, 'hf', 'never-made');
    expect(((await tryImport(gone)).err as Error).message).toBe(`${gone}: does not exist`);
    const dangling = path.join(scratch, 'hf', 'dangling');
    await symlink(gone, dangling);
    expect(((await tryImport(dangling)).err as Error).message).toBe(`${dangling}: a symbolic link to something that does not exist`);
  });

  it('weights that are a link loop: the file and the reason in words, with the code', async () => {
    const dir = await checkpoint('weights-loop', async (d) => {
      await rm(path.join(d, 'model.safetensors'));
      await symlink('loop2.safetensors', path.join(d, 'model.safetensors'));
      await symlink('model.safetensors', path.join(d, 'loop2.safetensors'));
    });
    await expectRefused(dir, /^loop2\.safetensors: a symbolic link loop \(ELOOP, stat\)$/);
  });
});

describe('a tokenizer that does not belong to the model', () => {
  it('an id at or past vocab_size is refused naming the token, though the tokenizer has no more tokens than vocab_size', async () => {
    const dir = await withTokenizer('tokenizer-gap');
    const file = path.join(dir, 'tokenizer.json');
    const tokenizer = JSON.parse(await readFile(file, 'utf8')) as { model: { vocab: Record<string, number> } };
    const moved = Object.keys(tokenizer.model.vocab).find((t) => tokenizer.model.vocab[t] === 40)!;
    // Id 40 becomes a gap and the token moves past the 16,384-row embedding: the count stays 16,384.
    tokenizer.model.vocab[moved] = 20000;
    await writeFile(file, JSON.stringify(tokenizer));
    const { err, left } = await tryImport(dir);
    expect(err).toBeInstanceOf(ImportError);
    expect((err as Error).message).toMatch(/^tokenizer\.json: token .* has id 20000, but the model's vocab_size is 16384 \(ids 0-16383\)/);
    expect((err as Error).message).toContain(`token ${JSON.stringify(moved)} has id 20000`);
    expect(left).toEqual([]);
  });
});

describe('files that are not regular files', () => {
  it('a FIFO as the weights or the config: refused at once (no read that blocks for ever)', async () => {
    const weights = await checkpoint('fifo-weights', async (d) => {
      await rm(path.join(d, 'model.safetensors'));
      execFileSync('mkfifo', [path.join(d, 'model.safetensors')]);
    });
    await expectRefused(weights, /^model\.safetensors: not a regular file/);
    const config = await checkpoint('fifo-config', async (d) => {
      await rm(path.join(d, 'config.json'));
      execFileSync('mkfifo', [path.join(d, 'config.json')]);
    });
    await expectRefused(config, /^config\.json: not a regular file/);
  });

  it('a directory named config.json or model.safetensors is named as such', async () => {
    const config = await checkpoint('dir-config', async (d) => {
      await rm(path.join(d, 'config.json'));
      await mkdir(path.join(d, 'config.json'));
    });
    await expectRefused(config, /^config\.json: a directory, not a file/);
    const weights = await checkpoint('dir-weights', async (d) => {
      await rm(path.join(d, 'model.safetensors'));
      await mkdir(path.join(d, 'model.safetensors'));
    });
    await expectRefused(weights, /^model\.safetensors: a directory, not a file/);
  });

  it('a safetensors file whose tensors overlap, leave a gap, or end before the file does is refused', async () => {
    /** A safetensors file of F32 tensors at the given offsets over `dataBytes` bytes of data. */
    const raw = (tensors: Record<string, [number, number]>, dataBytes: number) => {
      const header = Object.fromEntries(Object.entries(tensors).map(([n, [b, e]]) => [n, { dtype: 'F32', shape: [(e - b) / 4], data_offsets: [b, e] }]));
      const json = Buffer.from(JSON.stringify(header));
      const len = Buffer.alloc(8);
      len.writeBigUInt64LE(BigInt(json.length));
      return Buffer.concat([len, json, Buffer.alloc(dataBytes)]);
    };
    const cases: Array<[string, Buffer, RegExp]> = [
      ['overlap', raw({ a: [0, 8], b: [4, 12] }, 12), /^model\.safetensors: tensor b overlaps the tensor before it/],
      ['gap', raw({ a: [0, 8], b: [12, 16] }, 16), /^model\.safetensors: bytes \[\d+, \d+\) belong to no tensor/],
      ['trailing', raw({ a: [0, 8] }, 20), /^model\.safetensors: 12 bytes after the last tensor belong to no tensor/],
    ];
    for (const [name, bytes, message] of cases) {
      const dir = await checkpoint(`layout-${name}`, (d) => writeFile(path.join(d, 'model.safetensors'), bytes));
      await expectRefused(dir, message);
    }
  });

  it('offsets that disagree with the shape, run backwards, or pass the end of the file: each told as what it is', async () => {
    /** A safetensors file holding one F32 tensor `a` of `shape` at `offsets`, with `dataBytes` of data. */
    const file = (shape: number[], offsets: [number, number], dataBytes: number) => {
      const json = Buffer.from(JSON.stringify({ a: { dtype: 'F32', shape, data_offsets: offsets } }));
      const len = Buffer.alloc(8);
      len.writeBigUInt64LE(BigInt(json.length));
      return Buffer.concat([len, json, Buffer.alloc(dataBytes)]);
    };
    const cases: Array<[string, Buffer, RegExp]> = [
      ['span-short', file([4], [0, 8], 8), /^model\.safetensors: tensor a \(F32 \[4\]\) needs 16 bytes for its shape, but its data_offsets \[0, 8\] span 8; a corrupt header$/],
      ['backwards', file([2], [8, 0], 8), /^model\.safetensors: tensor a \(F32 \[2\]\) has data_offsets \[8, 0\] that run backwards \(the end before the start\); a corrupt header$/],
      ['truncated', file([4], [0, 16], 8), /^model\.safetensors: tensor a \(F32 \[4\]\) needs 16 bytes at \[\d+, \d+\) but the file is \d+ bytes \(truncated\)$/],
    ];
    for (const [name, bytes, message] of cases) {
      const dir = await checkpoint(`offsets-${name}`, (d) => writeFile(path.join(d, 'model.safetensors'), bytes));
      await expectRefused(dir, message);
    }
  });

  it('a JSON null index or header names its file (no bare TypeError)', async () => {
    // The index is read when there is no model.safetensors (transformers loads that first).
    const indexOnly = (text: string) => async (d: string) => {
      await rm(path.join(d, 'model.safetensors'));
      await writeFile(path.join(d, 'model.safetensors.index.json'), text);
    };
    const index = await checkpoint('null-index', indexOnly('null'));
    await expectRefused(index, /^model\.safetensors\.index\.json: has no "weight_map" object/);
    const numbers = await checkpoint('number-shard', indexOnly('{"weight_map": {"a": 7}}'));
    await expectRefused(numbers, /^model\.safetensors\.index\.json: bad shard name 7/);
    const header = await checkpoint('null-header', async (d) => {
      const json = Buffer.from('null');
      const len = Buffer.alloc(8);
      len.writeBigUInt64LE(BigInt(json.length));
      await writeFile(path.join(d, 'model.safetensors'), Buffer.concat([len, json]));
    });
    await expectRefused(header, /^model\.safetensors: the safetensors header must be a JSON object/);
  });
});

describe('hostile configs are refused before anything is built', () => {
  const cases: Array<[string, (c: Record<string, unknown>) => void, RegExp]> = [
    ['head-dim', (c) => void (c.head_dim = 2 ** 30), /^config\.json: "head_dim" is 1073741824, more than any model this importer builds/],
    ['layers', (c) => void (c.num_hidden_layers = 1e9), /^config\.json: "num_hidden_layers" is 1000000000, more than any model/],
    ['layers-vs-tensors', (c) => Object.assign(c, { num_hidden_layers: 4000, layer_types: undefined }), /num_hidden_layers 4000, the checkpoint stores 2 layers/],
    ['heads-vs-tensors', (c) => void (c.head_dim = 4096), /q_proj\.weight has shape \[128, 64\], the config implies \[16384, 64\]/],
    ['proto', (c) => void (c.model_type = '__proto__'), /^config\.json: model_type "__proto__" is not supported; supported:/],
    ['constructor', (c) => void (c.model_type = 'constructor'), /^config\.json: model_type "constructor" is not supported/],
    ['rope-unknown', (c) => void (c.rope_parameters = { rope_type: 'dynamic', rope_theta: 1e6 }), /^config\.json: rope scaling type "dynamic" is not supported \(default, linear, llama3\)/],
    // Scaling fields without a type: plain RoPE would drop the scaling the config states.
    ['rope-scaling-untyped', (c) => Object.assign(c, { rope_parameters: undefined, rope_theta: 500000, rope_scaling: { factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 1024 } }), /^config\.json: "rope_scaling" has "factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings" but no "rope_type" \(or "type"\)/],
    ['rope-parameters-untyped', (c) => void (c.rope_parameters = { rope_theta: 1e6, factor: 4 }), /^config\.json: "rope_parameters" has "factor" but no "rope_type" \(or "type"\)/],
    // A flag of the wrong type is refused, not read as its default (a tied model reported untied).
    ['tie-string', (c) => void (c.tie_word_embeddings = 'true'), /^config\.json: "tie_word_embeddings" must be true or false \(got "true", a string\)/],
    ['attention-bias-number', (c) => void (c.attention_bias = 1), /^config\.json: "attention_bias" must be true or false \(got 1, a number\)/],
    ['sliding-flag-string', (c) => Object.assign(c, { layer_types: undefined, use_sliding_window: 'false' }), /^config\.json: "use_sliding_window" must be true or false \(got "false", a string\)/],
    ['layer-type', (c) => void (c.layer_types = ['full_attention', 'linear_attention']), /^config\.json: layer 1 has layer type "linear_attention", which is not supported/],
    ['eps-negative', (c) => void (c.rms_norm_eps = -1), /^config\.json: "rms_norm_eps" must be a positive number \(got -1\)/],
    ['eps-zero', (c) => void (c.rms_norm_eps = 0), /^config\.json: "rms_norm_eps" must be a positive number \(got 0\)/],
    // A window that is not a positive integer on a sliding layer would be full attention without a word.
    ['window-fraction', (c) => Object.assign(c, { layer_types: ['sliding_attention', 'full_attention'], sliding_window: 2.5 }), /^config\.json: "sliding_window" must be a positive integer \(a number of tokens\) when layers use sliding attention, got 2\.5/],
    ['window-null', (c) => Object.assign(c, { layer_types: ['full_attention', 'sliding_attention'], sliding_window: null }), /^config\.json: "sliding_window" must be a positive integer .* got null/],
    ['window-negative', (c) => Object.assign(c, { layer_types: undefined, use_sliding_window: true, max_window_layers: 0, sliding_window: -1 }), /^config\.json: "sliding_window" must be a positive integer .* got -1/],
    ['window-zero', (c) => Object.assign(c, { layer_types: undefined, use_sliding_window: true, max_window_layers: 0, sliding_window: 0 }), /^config\.json: "sliding_window" must be a positive integer .* got 0/],
  ];
  it.each(cases)('%s', async (name, edit, message) => {
    const cfg = readConfig();
    edit(cfg);
    const dir = await checkpoint(`cfg-${name}`, (d) => writeFile(path.join(d, 'config.json'), JSON.stringify(cfg)));
    await expectRefused(dir, message);
  });

  it('rope_parameters holding only rope_theta is plain RoPE', async () => {
    const cfg = { ...readConfig(), rope_parameters: { rope_theta: 1e6 } };
    const dir = await checkpoint('rope-theta-only', (d) => writeFile(path.join(d, 'config.json'), JSON.stringify(cfg)));
    const { err, out } = await tryImport(dir);
    expect(err).toBeUndefined();
    expect(JSON.parse(await readFile(path.join(out, 'decision.json'), 'utf8')).import.rope).toEqual({ theta: 1e6, type: 'default' });
  });

  it('NaN weights are refused while streaming, nothing left behind', async () => {
    const tensors = readSafetensors(path.join(QWEN3, 'model.safetensors'));
    const emb = tensors.get('model.embed_tokens.weight')!;
    const nan: Tensor = { shape: emb.shape, data: new Float64Array(emb.data.length).fill(NaN) };
    tensors.set('model.embed_tokens.weight', nan);
    const dir = await checkpoint('nan', async (d) => writeSafetensors(path.join(d, 'model.safetensors'), tensors, 'F32'));
    await expectRefused(dir, /^model\.safetensors: tensor model\.embed_tokens\.weight holds NaN values/);
    expect(existsSync(path.join(scratch, 'models', 'nan', 'm'))).toBe(false);
  });

  it('infinite weights are refused, and as fp16 a weight past its largest value (it would become infinite)', async () => {
    const tensors = readSafetensors(path.join(QWEN3, 'model.safetensors'));
    const emb = tensors.get('model.embed_tokens.weight')!;
    const infinite = Float64Array.from(emb.data);
    infinite[7] = -Infinity;
    tensors.set('model.embed_tokens.weight', { shape: emb.shape, data: infinite });
    const inf = await checkpoint('inf', async (d) => writeSafetensors(path.join(d, 'model.safetensors'), tensors, 'F32'));
    await expectRefused(inf, /^model\.safetensors: tensor model\.embed_tokens\.weight holds infinite values/);

    const large = Float64Array.from(emb.data);
    large[7] = 1e5;
    tensors.set('model.embed_tokens.weight', { shape: emb.shape, data: large });
    const big = await checkpoint('big', async (d) => writeSafetensors(path.join(d, 'model.safetensors'), tensors, 'F32'));
    await expectRefused(big, /^model\.safetensors: tensor model\.embed_tokens\.weight holds 100000, beyond fp16's largest value 65504: import it with --dtype fp32/, 'fp16');
    expect((await tryImport(big, 'big-fp32', 'fp32')).err).toBeUndefined();
  });
});

describe('a checkpoint without a usable chat template', () => {
  const cases: Array<[string, unknown, RegExp]> = [
    ['missing', undefined, /^tokenizer_config\.json: no chat_template: the service renders decision prompts with its built-in ChatML template/],
    ['empty', '', /^tokenizer_config\.json: chat_template is empty: .*built-in ChatML/],
    ['a number', 42, /^tokenizer_config\.json: chat_template is a number, not a template: .*built-in ChatML/],
    ['null', null, /^tokenizer_config\.json: chat_template is null, not a template: .*built-in ChatML/],
  ];
  it.each(cases)('%s: imported with a warning, and decision.json records the ChatML fallback', async (name, template, warning) => {
    const dir = await withTokenizer(`no-template-${name.replace(/\W+/g, '-')}`);
    const cfg = JSON.parse(await readFile(path.join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
    if (template === undefined) delete cfg.chat_template;
    else cfg.chat_template = template;
    await writeFile(path.join(dir, 'tokenizer_config.json'), JSON.stringify(cfg));
    const result = await importModel({ hfDir: dir, outDir: path.join(scratch, 'models', `no-template-${name.replace(/\W+/g, '-')}`, 'm') });
    expect(result.hasTokenizer).toBe(true);
    expect(result.warnings.filter((w) => /chat_template/.test(w))).toEqual([expect.stringMatching(warning)]);
    expect(JSON.parse(await readFile(path.join(result.dir, 'decision.json'), 'utf8')).import.chatTemplate).toBe('chatml-fallback');
  }, 60_000);

  it("the checkpoint's own template: no warning, and decision.json says so", async () => {
    const dir = await withTokenizer('own-template');
    const result = await importModel({ hfDir: dir, outDir: path.join(scratch, 'models', 'own-template', 'm') });
    expect(result.warnings).toEqual([]);
    expect(JSON.parse(await readFile(path.join(result.dir, 'decision.json'), 'utf8')).import.chatTemplate).toBe('model');
  }, 60_000);
});

describe('chat_template.jinja beside a chat_template in tokenizer_config.json', () => {
  /** withTokenizer's checkpoint (its config holds the Qwen3 template) plus a chat_template.jinja. */
  async function withJinja(name: string, jinja: string): Promise<string> {
    const dir = await withTokenizer(name);
    await writeFile(path.join(dir, 'chat_template.jinja'), jinja);
    return dir;
  }

  it('the file wins, as in transformers, with a warning; the model renders with it', async () => {
    const jinja = '{% for m in messages %}<<{{ m.role }}>>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<<assistant>>{% endif %}';
    const dir = await withJinja('jinja-wins', jinja);
    const configTemplate = JSON.parse(await readFile(path.join(dir, 'tokenizer_config.json'), 'utf8')).chat_template as string;
    expect(configTemplate).toContain('<|im_start|>');
    const result = await importModel({ hfDir: dir, outDir: path.join(scratch, 'models', 'jinja-wins', 'm') });
    expect(result.warnings).toEqual([expect.stringMatching(/^chat_template\.jinja and tokenizer_config\.json's chat_template differ: decision prompts are rendered with chat_template\.jinja/)]);
    expect(JSON.parse(await readFile(path.join(result.dir, 'tokenizer_config.json'), 'utf8')).chat_template).toBe(jinja);
    expect(JSON.parse(await readFile(path.join(result.dir, 'decision.json'), 'utf8')).import.chatTemplate).toBe('model');
  }, 60_000);

  it('the same template in both: no warning', async () => {
    const probe = await withTokenizer('jinja-same-probe');
    const template = JSON.parse(await readFile(path.join(probe, 'tokenizer_config.json'), 'utf8')).chat_template as string;
    const dir = await withJinja('jinja-same', template);
    const result = await importModel({ hfDir: dir, outDir: path.join(scratch, 'models', 'jinja-same', 'm') });
    expect(result.warnings).toEqual([]);
  }, 60_000);

  it('a chat_template.jinja that does not parse is refused naming it, though the config holds a good template', async () => {
    const dir = await withJinja('jinja-bad', '{% for m in messages %}');
    const { err, left } = await tryImport(dir);
    expect(err).toBeInstanceOf(ImportError);
    expect((err as Error).message).toMatch(/^the chat template in chat_template\.jinja cannot render the decision prompt: prompt: the chat_template cannot be parsed/);
    expect(left).toEqual([]);
  }, 60_000);
});

describe('chat templates are rendered within bounds', () => {
  const templates: Array<[string, string, RegExp]> = [
    ['a huge range()', '{% for i in range(100000000) %}x{% endfor %}{{ messages[0].content }}', /range\(\) of 100000000 elements/],
    // Whichever bound it meets first on a busy machine: the step count or the clock.
    ['nested loops', '{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}', /(more than 1000000 evaluation steps|runs longer than 5000 ms)/],
    ['a doubling string', "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}", /a string of more than \d+ characters/],
  ];
  it.each(templates)('%s: refused at once, naming the limit, nothing written', async (name, template, message) => {
    const dir = await withTokenizer(`template-${name.replace(/\W+/g, '-')}`);
    const cfg = JSON.parse(await readFile(path.join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
    cfg.chat_template = template;
    await writeFile(path.join(dir, 'tokenizer_config.json'), JSON.stringify(cfg));
    const { err, left } = await tryImport(dir);
    expect((err as Error).message).toMatch(/^the chat template cannot render the decision prompt: prompt: the chat template /);
    expect((err as Error).message).toMatch(message);
    expect(left).toEqual([]);
  }, 120_000);
});
