/**
 * GELU as standard ONNX ops, in the compute dtype as torch applies it, for both graph builders
 * (decoder-graph.ts, fused-layers.ts): exact, 0.5 x (1 + erf(x / sqrt(2))), or torch's
 * approximate='tanh', 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
 */
import type { FloatDtype, GraphBuilder } from './onnx-writer.js';

export function geluNodes(g: GraphBuilder, dtype: FloatDtype, kind: 'gelu' | 'gelu_tanh', prefix: string, x: string): string {
  const half = g.op1('Mul', `${prefix}/Mul_half`, [x, g.float(dtype, [0.5], [])]);
  if (kind === 'gelu') {
    const erf = g.op1('Erf', `${prefix}/Erf`, [g.op1('Mul', `${prefix}/Mul_erf`, [x, g.float(dtype, [Math.SQRT1_2], [])])]);
    return g.op1('Mul', `${prefix}/Mul`, [half, g.op1('Add', `${prefix}/Add`, [erf, g.float(dtype, [1], [])])]);
  }
  const cube = g.op1('Mul', `${prefix}/Mul_cube`, [x, g.op1('Mul', `${prefix}/Mul_sq`, [x, x])]);
  const inner = g.op1('Add', `${prefix}/Add_inner`, [x, g.op1('Mul', `${prefix}/Mul_c`, [cube, g.float(dtype, [0.044715], [])])]);
  const tanh = g.op1('Tanh', `${prefix}/Tanh`, [g.op1('Mul', `${prefix}/Mul_k`, [inner, g.float(dtype, [Math.sqrt(2 / Math.PI)], [])])]);
  return g.op1('Mul', `${prefix}/Mul`, [half, g.op1('Add', `${prefix}/Add`, [tanh, g.float(dtype, [1], [])])]);
}
