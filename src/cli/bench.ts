/**
 * `decide bench`: the engine against the fresh-scoring baseline. Implementation in bench/run.ts.
 */
export async function run(argv: string[]): Promise<number> {
  void argv;
  process.stderr.write('decide bench: not implemented yet\n');
  return 1;
}
