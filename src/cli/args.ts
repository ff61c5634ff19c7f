/**
 * Option values shared by the commands that open the engine (serve, worker, batch): one parser each,
 * so every command accepts and rejects the same values with the same message.
 */

/** An integer option in [min, max], or the message saying why not. */
export function intArg(value: string, name: string, min: number, max: number): number | string {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(n) || n < min || n > max) {
    return `${name} must be an integer from ${min} to ${max}, got '${value}'`;
  }
  return n;
}

/** --threads N: CPU threads per forward pass (undefined: the engine's default, every core). */
export function threadsArg(value: string | undefined): number | undefined | string {
  return value === undefined ? undefined : intArg(value, '--threads', 1, 1024);
}

/** --provider cpu|cuda (default cpu). */
export function providerArg(value: string | undefined): 'cpu' | 'cuda' | string {
  const provider = value ?? 'cpu';
  if (provider !== 'cpu' && provider !== 'cuda') return `--provider must be cpu or cuda, got '${provider}'`;
  return provider;
}
