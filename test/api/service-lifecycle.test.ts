/**
 * DecisionService.open and close() on the tiny model: options no service can run with are refused
 * before anything is created; calls made before close() (still tokenizing, not yet in a scheduler
 * queue) are answered, calls made after it begins are refused as "shutting down".
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterAll, beforeAll, expect, it } from 'vitest';

import { ApiError } from '../../src/api/errors.js';
import { EngineError } from '../../src/errors/engine-error.js';
import { createServer } from '../../src/server/app.js';
import { DecisionService, type DecisionServiceOptions } from '../../src/service/decision-service.js';
import { tinyModelDir } from '../helpers/tiny-model.js';
import { decideBody, expectValidAnswers, tempModels, MIXED_QUESTIONS, type TempDirs } from './fixtures.js';

let dirs: TempDirs;

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
});
afterAll(() => dirs?.cleanup());

it('answers every call made before close() in the same tick, refuses the ones after', async () => {
  const service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false });
  const before = Array.from({ length: 10 }, (_, i) => service.decide(decideBody(`state ${i}`)));
  const batch = service.decideRecords('svc-alpha-2026-10', [
    { model: 'svc-alpha-2026-10', stateText: 'a record', questions: [{ id: 'q', type: 'noul', instructions: 'Is it?', options: [{ key: 'no', criteriaIndex: 0 }, { key: 'yes', criteriaIndex: 1 }] }] },
  ]);
  const closing = service.close();
  const after = service.decide(decideBody('too late')).then(
    () => undefined,
    (err: unknown) => err,
  );
  for (const res of await Promise.all(before)) expectValidAnswers(res.answers, MIXED_QUESTIONS);
  const [record] = await batch;
  expect(record!.ok).toBe(true);
  const refused = await after;
  expect(refused).toBeInstanceOf(ApiError);
  expect(refused).toMatchObject({ code: 'server_error', message: 'the service is shutting down' });
  await closing;
  expect(service.isReady()).toBe(false);
});

it('preloadInBackground: open() returns before the preload is loaded; calls wait for it; its error is whenPreloaded()\'s and every call\'s', async () => {
  const service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false, preloadInBackground: true });
  try {
    expect(service.isReady()).toBe(false);
    const answer = service.decide(decideBody('The parcel arrived broken.'));
    await service.whenPreloaded();
    expect(service.isReady()).toBe(true);
    expectValidAnswers((await answer).answers, MIXED_QUESTIONS);
  } finally {
    await service.close();
  }

  // Without the option the same preload is open()'s own error, as before.
  await expect(DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false, preload: ['nope'] })).rejects.toMatchObject({ code: 'not_found' });
  const failed = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false, preload: ['nope'], preloadInBackground: true });
  try {
    await expect(failed.whenPreloaded()).rejects.toMatchObject({ code: 'not_found' });
    await expect(failed.decide(decideBody('The parcel arrived broken.'))).rejects.toMatchObject({ code: 'not_found', message: expect.stringContaining("'nope'") });
    expect(failed.isReady()).toBe(false);
  } finally {
    await failed.close();
  }
});

it('open() refuses a state limit under 1 token and a models folder that is a file, with ERR_INPUT', async () => {
  for (const bad of [-1, 0, 2.5, Number.NaN]) {
    await expect(DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false, maxStateTokens: bad }), String(bad)).rejects.toMatchObject({
      code: 'ERR_INPUT',
      message: expect.stringMatching(/^maxStateTokens must be a whole number of tokens of at least 1/),
    });
  }
  const file = path.join(dirs.root, 'models-is-a-file');
  await writeFile(file, 'x');
  await expect(DecisionService.open({ modelsDir: file })).rejects.toMatchObject({ code: 'ERR_INPUT', message: `modelsDir ${file} is not a folder (it holds one folder per model)` });
  // A path through a file: the option's fault too, not a system error, in the same words on every
  // Node (20's statSync throws ENOTDIR for it where 22's says nothing is there).
  await expect(DecisionService.open({ modelsDir: path.join(file, 'models') })).rejects.toMatchObject({
    code: 'ERR_INPUT',
    message: expect.stringMatching(new RegExp(`^modelsDir: cannot create ${path.join(file, 'models').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: .* is not a folder`)),
  });
  await expect(DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false, maxStateTokens: '10' as never })).rejects.toMatchObject({
    code: 'ERR_INPUT',
    message: "maxStateTokens must be a whole number of tokens of at least 1, got '10'",
  });
});

it('a closed service: isOpen is false, and no server is built on it', async () => {
  const svc = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false });
  expect(svc.isOpen).toBe(true);
  await svc.close();
  expect(svc.isOpen).toBe(false);
  await expect(createServer({ service: svc, apiKeys: ['k'], dataDir: path.join(dirs.root, 'never-made') })).rejects.toMatchObject({
    code: 'ERR_INPUT',
    message: 'createServer: service must be an open DecisionService, got one that is closed',
  });
});

it('open() refuses bad engine options as EngineError ERR_INPUT before it writes the default model', async () => {
  const fresh = path.join(dirs.root, 'fresh-models');
  const cases: Array<[DecisionServiceOptions, RegExp, NodeJS.ProcessEnv?]> = [
    [{ threads: 0 }, /^options\.threads must be/],
    [{ provider: 'gpu' as 'cpu' }, /^options\.provider must be/],
    [{ runtime: { engine: { cudaGraphs: true } } }, /^options\.cudaGraphs needs provider 'cuda'/],
    [{}, /^DECIDE_THREADS must be/, { DECIDE_THREADS: '0' }],
  ];
  for (const [options, message, env] of cases) {
    const saved = { ...process.env };
    Object.assign(process.env, env ?? {});
    try {
      const err = await DecisionService.open({ modelsDir: fresh, ...options }).catch((e: unknown) => e);
      expect(err, message.source).toBeInstanceOf(EngineError);
      expect(err).toMatchObject({ code: 'ERR_INPUT', message: expect.stringMatching(message) });
    } finally {
      process.env = saved;
    }
    expect(existsSync(fresh), 'nothing written').toBe(false);
  }
});

it('open() refuses unknown options and scheduler options that would refuse every call, naming them', async () => {
  const open = (options: Record<string, unknown>) => DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false, ...options } as DecisionServiceOptions);
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ bogus: 1 }, "DecisionService.open: unknown option 'bogus'"],
    [{ thread: 2 }, "DecisionService.open: unknown option 'thread' (did you mean 'threads'?)"],
    [{ runtime: { schedulerOptions: {} } }, "DecisionService.open: runtime: unknown option 'schedulerOptions' (did you mean 'scheduler'?)"],
    [{ runtime: { engine: { thread: 2 } } }, "DecisionService.open: runtime.engine: unknown option 'thread' (did you mean 'threads'?)"],
    [{ runtime: { scheduler: { maxQueuedJobs: 0 } } }, 'runtime.scheduler.maxQueuedJobs must be a whole number of jobs of at least 1, got 0'],
    [{ runtime: { scheduler: { maxQueuedJobs: -1 } } }, 'runtime.scheduler.maxQueuedJobs must be a whole number of jobs of at least 1, got -1'],
    [{ runtime: { scheduler: { maxQueueWaitMs: -5 } } }, 'runtime.scheduler.maxQueueWaitMs must be a number of milliseconds above 0 (Infinity: no limit), got -5'],
    [{ runtime: { scheduler: { maxQueueWait: 5 } } }, "runtime.scheduler: unknown option 'maxQueueWait' (did you mean 'maxQueueWaitMs'?)"],
  ];
  for (const [options, message] of cases) {
    const err = await open(options).catch((e: unknown) => e);
    expect(err, message).toBeInstanceOf(EngineError);
    expect(err).toMatchObject({ code: 'ERR_INPUT', message });
  }
  // Infinity is a wait without limit, not a bad value.
  await (await open({ runtime: { scheduler: { maxQueueWaitMs: Infinity } } })).close();
});

it('open() refuses options of the wrong type with ERR_INPUT naming them, before it creates anything', async () => {
  const fresh = path.join(dirs.root, 'typed-models');
  const cases: Array<[unknown, string]> = [
    [null, 'DecisionService.open: options must be an object, got null'],
    [[], 'DecisionService.open: options must be an object, got an array'],
    [{ modelsDir: 123 }, 'DecisionService.open: modelsDir must be a path (a string), got 123'],
    [{ modelsDir: fresh, ensureDefaultModel: 'yes' }, "DecisionService.open: ensureDefaultModel must be true or false, got 'yes'"],
    [{ modelsDir: fresh, preload: 'svc-alpha' }, "DecisionService.open: preload must be an array of model ids or aliases, got 'svc-alpha'"],
    [{ modelsDir: fresh, preload: ['svc-alpha', 1] }, 'DecisionService.open: preload[1] must be a model id or alias, got 1'],
    [{ modelsDir: fresh, preloadInBackground: 1 }, 'DecisionService.open: preloadInBackground must be true or false, got 1'],
    [{ modelsDir: fresh, log: 'x' }, "DecisionService.open: log must be a function taking a line, got 'x'"],
    [{ modelsDir: fresh, warn: 5 }, 'DecisionService.open: warn must be a function taking a line, got 5'],
    [{ modelsDir: fresh, runtime: null }, 'DecisionService.open: runtime must be an object, got null'],
    [{ modelsDir: fresh, runtime: { engine: 4 } }, 'DecisionService.open: runtime.engine must be an object, got 4'],
    [{ modelsDir: fresh, runtime: { scheduler: [] } }, 'DecisionService.open: runtime.scheduler must be an object, got an array'],
    [{ modelsDir: fresh, validation: 'strict' }, "DecisionService.open: validation must be an object, got 'strict'"],
    [{ modelsDir: '/proc/decide-models' }, 'modelsDir: cannot create /proc/decide-models: ENOENT'],
  ];
  for (const [options, message] of cases) {
    const err = await DecisionService.open(options as DecisionServiceOptions).catch((e: unknown) => e);
    expect(err, message).toBeInstanceOf(EngineError);
    expect(err).toMatchObject({ code: 'ERR_INPUT', message });
    expect(existsSync(fresh), 'nothing written').toBe(false);
  }
});

it('open() refuses validation limits it does not know or that would turn a limit off or refuse every call, naming them', async () => {
  const open = (validation: Record<string, unknown>) => DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false, preload: [], validation });
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ bogus: 1 }, "DecisionService.open: validation: unknown option 'bogus'"],
    [{ maxQuestion: 5 }, "DecisionService.open: validation: unknown option 'maxQuestion' (did you mean 'maxQuestions'?)"],
    [{ maxQuestions: 'x' }, "validation.maxQuestions must be a whole number of at least 1, got 'x'"],
    [{ maxQuestions: -1 }, 'validation.maxQuestions must be a whole number of at least 1, got -1'],
    [{ maxStateDepth: Number.NaN }, 'validation.maxStateDepth must be a whole number from 1 to 1000, got NaN'],
    [{ maxStateDepth: 100_000 }, 'validation.maxStateDepth must be a whole number from 1 to 1000, got 100000'],
    [{ maxStateValues: 2.5 }, 'validation.maxStateValues must be a whole number of at least 1, got 2.5'],
  ];
  for (const [validation, message] of cases) {
    const err = await open(validation).catch((e: unknown) => e);
    expect(err, message).toBeInstanceOf(EngineError);
    expect(err).toMatchObject({ code: 'ERR_INPUT', message });
  }
  // A limit in range holds: 3 questions where 2 are allowed are refused, a state 1,000 levels deep is answered.
  const service = await open({ maxQuestions: 2, maxStateDepth: 1000 });
  try {
    await expect(service.decide(decideBody('three questions'))).rejects.toMatchObject({ code: 'invalid_question', message: expect.stringMatching(/^questions: at most 2 questions per request/) });
    let state: Record<string, unknown> = { text: 'deep' };
    for (let i = 1; i < 1000; i++) state = { a: state };
    const body = decideBody(state, { q: { type: 'noul', instructions: 'Is it?' } });
    await expect(service.decide(body)).resolves.toMatchObject({ answers: { q: expect.any(Object) } });
  } finally {
    await service.close();
  }
});

it('open(): an empty DECIDE_MODELS_DIR is unset (./models), not the current directory', async () => {
  const saved = process.env.DECIDE_MODELS_DIR;
  process.env.DECIDE_MODELS_DIR = '';
  try {
    const service = await DecisionService.open({ ensureDefaultModel: false, preload: [] });
    try {
      expect(service.registry.modelsDir).toBe(path.resolve('models'));
    } finally {
      await service.close();
    }
  } finally {
    if (saved === undefined) delete process.env.DECIDE_MODELS_DIR;
    else process.env.DECIDE_MODELS_DIR = saved;
  }
});

it('open() refuses an empty modelsDir (it would mean the current directory), as the CLI refuses an empty --models-dir', async () => {
  const cwd = process.cwd();
  const here = path.join(dirs.root, 'cwd-for-empty-models-dir');
  await mkdir(here);
  process.chdir(here);
  try {
    for (const modelsDir of ['', '  ']) {
      const err = await DecisionService.open({ modelsDir }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EngineError);
      expect(err).toMatchObject({ code: 'ERR_INPUT', message: 'DecisionService.open: modelsDir must name a folder, got an empty value' });
    }
    expect(await readdir(here), 'no default model written in the current directory').toEqual([]);
  } finally {
    process.chdir(cwd);
  }
});

it('a forced int8 path is logged at load, at warning level, with its reason (on a CPU without VNNI or AMX, u8s8 says it may answer wrongly)', async () => {
  const int8 = await tempModels([]);
  try {
    await symlink(await tinyModelDir({}, 'int8'), path.join(int8.modelsDir, 'tiny-int8-2026-10'), 'dir');
    const logged: string[] = [];
    const warned: string[] = [];
    const options = { modelsDir: int8.modelsDir, ensureDefaultModel: false, preload: ['tiny-int8-2026-10'], runtime: { engine: { int8Path: 'u8u8' as const } } };
    const service = await DecisionService.open({ ...options, log: (l) => logged.push(l), warn: (l) => warned.push(l) });
    await service.close();
    // At warning level (an operator running at --log-level warn sees it).
    expect(warned.filter((l) => l.includes('int8 path'))).toEqual([expect.stringMatching(/^model tiny-int8-2026-10: int8 path u8u8, forced \(DECIDE_INT8_KERNEL or options\.int8Path\)/)]);
    expect(logged.filter((l) => l.includes('int8 path'))).toEqual([]);
    // The automatic choice is not an operator's: nothing said.
    const quiet: string[] = [];
    const auto = await DecisionService.open({ modelsDir: int8.modelsDir, ensureDefaultModel: false, preload: ['tiny-int8-2026-10'], log: (l) => quiet.push(l) });
    await auto.close();
    expect(quiet.filter((l) => l.includes('int8 path'))).toEqual([]);
  } finally {
    int8.cleanup();
  }
});
