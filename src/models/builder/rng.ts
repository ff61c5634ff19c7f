/**
 * Seeded PRNG for the model builder: xoshiro128** seeded through splitmix32 from (seed, stream name).
 * Only 32-bit integer ops (Math.imul, shifts) and exact float ops, so a seed gives byte-identical
 * weights on every platform. One stream per tensor: a tensor's values do not depend on the order in
 * which tensors are generated.
 */
export class Rng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number, stream = '') {
    let x = (hashString(stream) ^ Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.floor(seed / 0x100000000)) >>> 0;
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /**
   * Fills `out` with mean-0 values of standard deviation `std`: the sum of four 16-bit uniforms
   * (Irwin-Hall, bounded at +-3.46 std), which is normal enough for random weights and ~10x faster
   * than Box-Muller.
   */
  fillNormal(out: Float32Array, std: number): void {
    const scale = (std * Math.sqrt(3)) / 65536;
    let s0 = this.s0, s1 = this.s1, s2 = this.s2, s3 = this.s3;
    for (let i = 0; i < out.length; i++) {
      let sum = 0;
      for (let k = 0; k < 2; k++) {
        const r = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
        const t = s1 << 9;
        s2 ^= s0;
        s3 ^= s1;
        s1 ^= s2;
        s0 ^= s3;
        s2 ^= t;
        s3 = rotl(s3, 11);
        sum += (r & 0xffff) + (r >>> 16);
      }
      out[i] = (sum - 131070) * scale;
    }
    this.s0 = s0;
    this.s1 = s1;
    this.s2 = s2;
    this.s3 = s3;
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/** FNV-1a over UTF-16 code units. */
function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
