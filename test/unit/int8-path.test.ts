/**
 * Which integer GEMM path an int8 model runs (src/engine/int8-path.ts), from the CPU's flags as
 * /proc/cpuinfo lists them, and how DECIDE_INT8_KERNEL and the load option force one.
 */
import { describe, expect, it } from 'vitest';

import { cpuInt8Support } from '../../src/engine/cpu-int8.js';
import { chooseInt8Path, int8PathRequest } from '../../src/engine/int8-path.js';
import { EngineError } from '../../src/errors/engine-error.js';

const x86 = (flags: string) => `processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse2 ssse3 fma avx avx2 ${flags}\n`;
const arm = (features: string) => `processor\t: 0\nFeatures\t: fp asimd evtstrm aes crc32 ${features}\n`;

describe('chooseInt8Path (auto)', () => {
  it.each([
    ['AVX-512 VNNI (Cascade Lake, Zen 4)', x86('avx512f avx512bw avx512_vnni'), 'u8s8', /avx512_vnni: u8 x s8 runs on its int8 dot-product instructions/],
    ['AVX-VNNI without AVX-512 (Alder Lake)', x86('avx_vnni'), 'u8s8', /avx_vnni/],
    ['AMX (Sapphire Rapids)', x86('avx512f avx512_vnni amx_bf16 amx_tile amx_int8'), 'u8s8', /avx512_vnni, amx_int8/],
    ['AVX2 only (Zen 3)', x86('sha_ni vaes'), 'u8u8', /no VNNI or AMX: .*saturating int16.*u8 x u8 GEMM is exact/],
    ['AVX-512 without VNNI (Skylake-SP)', x86('avx512f avx512bw avx512dq'), 'u8u8', /no VNNI or AMX/],
    ['Arm with dot product', arm('asimddp'), 'u8u8', /asimddp \(Arm\): ONNX Runtime's u8 x u8 GEMM uses its dot-product instructions/],
    ['Arm with dot product and i8mm', arm('asimddp i8mm'), 'u8u8', /asimddp, i8mm \(Arm\)/],
    ['Arm without dot product', arm(''), 'u8u8', /no VNNI or AMX/],
  ])('%s', (_name, cpuinfo, path, reason) => {
    const choice = chooseInt8Path('auto', cpuInt8Support(cpuinfo));
    expect(choice.path).toBe(path);
    expect(choice.forced).toBe(false);
    expect(choice.reason).toMatch(reason);
  });

  it('no flags to read (no /proc/cpuinfo): the u8 x u8 path, exact everywhere', () => {
    const choice = chooseInt8Path('auto', cpuInt8Support('processor\t: 0\n'));
    expect(choice).toEqual({ path: 'u8u8', forced: false, reason: expect.stringMatching(/could not be read/) });
  });
});

describe('forcing a path', () => {
  it('a forced path wins over the flags, and says when u8 x s8 may saturate on this CPU', () => {
    const vnni = cpuInt8Support(x86('avx512_vnni'));
    const avx2 = cpuInt8Support(x86(''));
    expect(chooseInt8Path('u8u8', vnni)).toMatchObject({ path: 'u8u8', forced: true });
    expect(chooseInt8Path('u8s8', avx2)).toMatchObject({ path: 'u8s8', forced: true, reason: expect.stringMatching(/no VNNI or AMX, so its u8 x s8 GEMM may add pairs/) });
    expect(chooseInt8Path('u8s8', vnni).reason).not.toMatch(/saturating/);
  });

  it('the load option wins over DECIDE_INT8_KERNEL; empty or auto is auto', () => {
    expect(int8PathRequest(undefined, undefined)).toBe('auto');
    expect(int8PathRequest(undefined, ' ')).toBe('auto');
    expect(int8PathRequest(undefined, 'auto')).toBe('auto');
    expect(int8PathRequest(undefined, 'u8s8')).toBe('u8s8');
    expect(int8PathRequest('u8u8', 'u8s8')).toBe('u8u8');
    expect(int8PathRequest('auto', 'u8s8')).toBe('auto');
  });

  it('a bad value is an ERR_INPUT error naming where it came from', () => {
    const thrown = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        return err as EngineError;
      }
      throw new Error('no error');
    };
    const env = thrown(() => int8PathRequest(undefined, 'vnni'));
    expect(env).toBeInstanceOf(EngineError);
    expect(env.code).toBe('ERR_INPUT');
    expect(env.message).toBe("DECIDE_INT8_KERNEL must be auto, u8u8 or u8s8 (got 'vnni')");
    expect(thrown(() => int8PathRequest('s8', undefined)).message).toBe("options.int8Path must be auto, u8u8 or u8s8 (got 's8')");
  });
});
