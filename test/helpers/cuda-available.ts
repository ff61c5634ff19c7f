/**
 * Whether this host runs the CUDA engine: the test/gpu/ files skip without it. It loads (and closes)
 * an engine on `modelDir` with provider 'cuda', so a host with a GPU but a broken CUDA setup skips too.
 */
import { Engine } from '../../src/engine/engine.js';

export async function cudaAvailable(modelDir: string): Promise<boolean> {
  return Engine.load({ modelDir, provider: 'cuda' }).then(
    (engine) => {
      engine.close();
      return true;
    },
    () => false,
  );
}
