/**
 * cpuInt8Support: which int8 dot-product flags a /proc/cpuinfo lists (x86 VNNI and AMX, Arm's
 * dot product), and the note the bench and `--dtype int8` print from it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

import { cpuInt8Support, int8SpeedNote } from '../../src/engine/cpu-int8.js';

const X86 = (flags: string) => `processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: ${flags}\n\nprocessor\t: 1\nflags\t\t: ${flags}\n`;

describe('cpuInt8Support', () => {
  it('finds VNNI and AMX among x86 flags, and says so', () => {
    const s = cpuInt8Support(X86('fpu sse2 avx2 avx512f avx512_vnni amx_tile amx_int8'));
    expect(s).toEqual({ dotProduct: true, flags: ['avx512_vnni', 'amx_int8'] });
    expect(int8SpeedNote(s)).toMatch(/has int8 dot-product instructions \(avx512_vnni, amx_int8\)/);
  });

  it('an AVX2-only x86 has none: the note says int8 saves memory, little or no time', () => {
    const s = cpuInt8Support(X86('fpu sse2 fma avx avx2 sha_ni'));
    expect(s).toEqual({ dotProduct: false, flags: [] });
    expect(int8SpeedNote(s)).toMatch(/no int8 dot-product instructions .* memory and disk, little or no time/);
  });

  it("reads Arm's Features line (asimddp)", () => {
    expect(cpuInt8Support('processor\t: 0\nFeatures\t: fp asimd evtstrm aes asimddp sha512\n')).toEqual({ dotProduct: true, flags: ['asimddp'] });
  });

  it('says nothing without a flags line', () => {
    expect(cpuInt8Support('processor\t: 0\n')).toBeUndefined();
    expect(int8SpeedNote(undefined)).toBeUndefined();
  });

  it.runIf(existsSync('/proc/cpuinfo'))("reads this host's own /proc/cpuinfo", () => {
    const s = cpuInt8Support();
    expect(s).toBeDefined();
    const text = readFileSync('/proc/cpuinfo', 'utf8');
    for (const f of s!.flags) expect(text).toMatch(new RegExp(`\\b${f}\\b`));
  });
});
