// The three places that list the `decide` commands' options must agree with the commands
// themselves: `decide --help` (src/cli/main.ts summaries), each `decide <command> --help`, and the
// README's command table. Every option named in a summary or in a README row must be one the
// command's own help lists, with the same values (`--dtype fp32|fp16` beside a command that also
// takes int8 is drift). Runs the CLI's entry point in this process: --help loads no model.
import { readFile } from 'node:fs/promises';
import { describe, expect, it, vi } from 'vitest';

import { main } from '../../src/cli/main.js';

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
