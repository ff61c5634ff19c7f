// The three places that list the `decide` commands' options must agree with the commands
// themselves: `decide --help` (src/cli/main.ts summaries), each `decide <command> --help`, and the
// README's command table. Every option named in a summary or in a README row must be one the
// command's own help lists, with the same values (`--dtype fp32|fp16` beside a command that also
// takes int8 is drift). Every command that loads an engine takes every engine option of
// ENGINE_OPTIONS as a flag, with the same check, and the renamed --packing keeps working. Runs
// the CLI's entry point in this process: --help and a refused value load no model.
import { readFile } from 'node:fs/promises';
import { describe, expect, it, vi } from 'vitest';

import { main } from '../../src/cli/main.js';
import { ENGINE_OPTION_NAMES, ENGINE_OPTIONS } from '../../src/engine/engine-options.js';

async function runHere(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const captured = { stdout: '', stderr: '' };
  const capture = (stream: 'stdout' | 'stderr') =>
    vi.spyOn(process[stream], 'write').mockImplementation((chunk: string | Uint8Array) => {
      captured[stream] += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
      return true;
    });
  const spies = [capture('stdout'), capture('stderr')];
  try {
    const code = await main(args);
    return { code, ...captured };
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}

/** `decide --help`'s command lines: name -> summary. */
async function commandSummaries(): Promise<Map<string, string>> {
  const { code, stdout } = await runHere(['--help']);
  expect(code).toBe(0);
  const lines = stdout.split('\n').filter((line) => /^ {2}[a-z-]+ /.test(line));
  return new Map(lines.map((line) => {
    const [, name, summary] = /^ {2}([a-z-]+)\s+(.*)$/.exec(line)!;
    return [name, summary];
  }));
}

/** `--option VALUE` fragments (VALUE: an ALL-CAPS placeholder or a|b list), and bare `--flag`s. */
function optionFragments(text: string): string[] {
  return [...text.matchAll(/--[a-z][a-z-]*(?: (?:[A-Z][A-Z_.]*|[a-z0-9.-]+(?:\\?\|[a-z0-9.-]+)+))?/g)].map((m) => m[0].replaceAll('\\|', '|'));
}

/**
 * Whether the help names the option with exactly those values. Where the help gives the option a
 * value list (`--dtype fp32|fp16|int8`), the fragment's list must be that list: `--dtype fp32|fp16`
 * is drift. Otherwise (`--provider P`, `--preset NAME`) each value must be named in the help.
 */
function helpNames(help: string, fragment: string): boolean {
  const [option, values] = fragment.split(' ');
  const named = new RegExp(`${option}(?![a-z-])`);
  if (!named.test(help)) return false;
  if (!values || /^[A-Z]/.test(values)) return true;
  const lists = [...help.matchAll(new RegExp(`${option} ([a-z0-9.-]+(?:\\|[a-z0-9.-]+)+)`, 'g'))].map((m) => m[1]);
  if (lists.length > 0) return lists.includes(values);
  return values.split('|').every((v) => new RegExp(`\\b${v.replaceAll('.', '\\.')}\\b`).test(help));
}

describe('decide --help, decide <command> --help and the README agree', async () => {
  const summaries = await commandSummaries();

  it('lists every command, and each command has its own --help', async () => {
    expect([...summaries.keys()].sort()).toEqual(['batch', 'bench', 'calibrate', 'gpu-report', 'import-model', 'make-model', 'serve', 'setup-cuda', 'worker']);
    for (const name of summaries.keys()) {
      const { code, stdout } = await runHere([name, '--help']);
      expect(code, name).toBe(0);
      expect(stdout, name).toMatch(new RegExp(`^usage: decide ${name}`));
    }
  });

  it('names in each summary only options its command takes, with the same values', async () => {
    for (const [name, summary] of summaries) {
      const { stdout: help } = await runHere([name, '--help']);
      for (const fragment of optionFragments(summary)) expect(helpNames(help, fragment), `decide ${name}: ${fragment}`).toBe(true);
    }
  });

  it("the README's command table has a row per command, naming only options it takes", async () => {
    const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
    const rows = [...readme.matchAll(/^\| `decide ([a-z-]+)([^`]*)` \|/gm)];
    expect(new Set(rows.map((r) => r[1]))).toEqual(new Set(summaries.keys()));
    for (const [, name, synopsis] of rows) {
      const { stdout: help } = await runHere([name, '--help']);
      for (const fragment of optionFragments(synopsis)) {
        expect(helpNames(help, fragment), `README decide ${name}: ${fragment}`).toBe(true);
      }
    }
  });
});

describe('every command that loads an engine takes every engine option, from one table', () => {
  const loaders: Array<[string, string[]]> = [
    ['serve', []],
    ['worker', []],
    ['batch', ['in.jsonl', '--model', 'm', '--out', 'out.jsonl']],
    ['calibrate', ['--model', 'm', '--data', 'd.jsonl']],
    ['bench', []],
  ];

  it.each(loaders)('decide %s --help lists each flag with its variable', async (name) => {
    const { stdout } = await runHere([name, '--help']);
    for (const option of ENGINE_OPTION_NAMES) {
      const { flag, env } = ENGINE_OPTIONS[option];
      expect(stdout, `${name}: ${flag}`).toMatch(new RegExp(`^  ${flag} `, 'm'));
      expect(stdout, `${name}: ${env}`).toContain(env);
    }
  });

  it.each(loaders)('decide %s refuses a bad engine flag or variable before loading anything (exit 2, named)', async (name, required) => {
    const bad = await runHere([name, ...required, '--token-budget', '0']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`decide ${name}: --token-budget must be an integer of at least 1, got '0'`);
    const saved = process.env.DECIDE_PACK_SUFFIXES;
    process.env.DECIDE_PACK_SUFFIXES = 'sometimes';
    try {
      const badEnv = await runHere([name, ...required]);
      expect(badEnv.code).toBe(2);
      expect(badEnv.stderr).toContain(`decide ${name}: DECIDE_PACK_SUFFIXES must be on or off, got 'sometimes'`);
    } finally {
      if (saved === undefined) delete process.env.DECIDE_PACK_SUFFIXES;
      else process.env.DECIDE_PACK_SUFFIXES = saved;
    }
  });
});

describe('--packing, the old name of two options, still works where users have it', () => {
  it('bench: the engine layout, now --pack-suffixes (a notice says so, the value is checked as that)', async () => {
    const res = await runHere(['bench', '--packing', 'maybe']);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain("decide bench: --packing is now --pack-suffixes (the engine's question layout); taking --packing maybe as --pack-suffixes");
    expect(res.stderr).toContain("decide bench: --pack-suffixes must be on or off, got 'maybe'");
  });

  it('gpu-report: the layouts to bench, now --pack-suffixes', async () => {
    const res = await runHere(['gpu-report', '--provider', 'cpu', '--packing', 'on,sideways']);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('decide gpu-report: --packing is now --pack-suffixes');
    expect(res.stderr).toContain("--pack-suffixes: 'on,sideways' is not a comma-separated list of on, off");
  });

  it('make-model: the graph feature, now --segment-ids', async () => {
    const res = await runHere(['make-model', '--preset', 'tiny', '--out', 'never-written', '--packing', 'maybe']);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('decide make-model: --packing is now --segment-ids (whether the graph takes segment ids)');
    expect(res.stderr).toContain("--segment-ids must be on or off, got 'maybe'");
  });
});
