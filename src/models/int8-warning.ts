/**
 * A warning for int8 models written before the u8 x u8 kernel (quantize.ts): their decision.json
 * records the projections' kernel as 'rowq', int8 weights multiplied by ONNX Runtime's u8 x s8
 * GEMM, which saturates in int16 on CPUs without VNNI and moved answers by up to 1.5e-1 on an AVX2
 * host (docs/models.md, int8 weights). They still load; the service logs this once per load.
 */
import { storedInt8Kernel } from '../engine/int8-graph.js';

/** The kernels whose weights are int8 (u8 x s8): 'rowq' is the old name of 'rowq-s8'. */
const SATURATING_KERNELS = new Set(['rowq', 'rowq-s8', 'dqmm']);

/** The warning for the model in `modelDir`, or undefined (not int8, a safe kernel, or no readable decision.json). */
export function saturatingInt8Warning(modelDir: string): string | undefined {
  const kernel = storedInt8Kernel(modelDir);
  if (kernel === undefined || !SATURATING_KERNELS.has(kernel)) return undefined;
  return (
    `int8 weights multiplied as u8 x s8 (kernel '${kernel}'): on a CPU without VNNI (AVX2) ONNX Runtime's ` +
    'GEMM saturates and answers drift from fp32 (up to 1.5e-1 in probability measured); re-create the model ' +
    'with make-model or import-model --dtype int8 (docs/models.md, int8 weights)'
  );
}
