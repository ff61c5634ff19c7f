/**
 * The builder's storage types, in a file of their own that imports nothing: makeModel's options
 * name them, and the package's published declarations must not pull in the ONNX protobuf types
 * (onnx-writer.ts) through them (onnx-proto's declarations need an ambient `Long` that a
 * consumer with `"types": ["node"]` does not have).
 */

/** Storage type of a float tensor. */
export type FloatDtype = 'fp32' | 'fp16';

/** What make-model and import-model store: a float type, or int8 weights that compute in fp32. */
export type ModelDtype = FloatDtype | 'int8';

/** The int8 kernels (see the top of quantize.ts). */
export type Int8Kernel = 'rowq-u8' | 'rowq-s8' | 'dqmm' | 'nbits8';

export interface Int8Scheme {
  /** The projections' and MLP's kernel. */
  kernel: Int8Kernel;
  /**
   * The LM head's: 'fp32' leaves it a MatMul. The engine's LM-head rewrite gathers the wanted rows
   * before the head and is verified against the stock graph at 1e-4, which a per-tensor quantized
   * head ('dqmm') fails (its activation scale then comes from fewer rows): the engine then falls
   * back to the stock graph's logits for every position. 'nbits8' quantizes rows on their own and
   * passes.
   */
  lmHead: Int8Kernel | 'fp32';
  /** MatMulNBits' block size along K (a power of two >= 16 dividing K). */
  block: number;
}
