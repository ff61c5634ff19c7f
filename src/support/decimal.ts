/**
 * A number written as decimal digits with an optional fraction (`0.25`, `1`, `.5`, blanks around
 * it allowed), or undefined. Number() alone would also read '' and blanks as 0 and take `0x10`,
 * `0b1` and `1e3`: the DECIDE_* variables and the fractional flags (`--scale`) read numbers through
 * this one, so they take and refuse the spellings the integer flags do (intArg).
 * @example parseDecimal('0.5') // 0.5
 * @example parseDecimal('0x10') // undefined
 */
export function parseDecimal(text: string): number | undefined {
  return /^\s*(\d+\.?\d*|\.\d+)\s*$/.test(text) ? Number(text) : undefined;
}
