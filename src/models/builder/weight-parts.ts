/**
 * Weights that a graph stores joined or changed from the tensors the standard-op graph (and a
 * Hugging Face checkpoint) hold under their own names: today the fused decoder graph's norm weights
 * with an offset (fused-layers.ts; Gemma's norms scale by 1 + weight). Each such weight is declared
 * with its parts, so make-model draws the same random values for them and import-model reads them
 * from the checkpoint; assembleWeight joins them (side by side or stacked) and adds the offsets.
 */

/** How make-model draws a part's values (a checkpoint import reads them instead). */
export type PartInit = { kind: 'normal'; std: number } | { kind: 'ones' } | { kind: 'zeros' };

/**
 * One part of an assembled weight, as the standard-op graph declares it: `name` and `dims` ([in,
 * out] for a projection, [n] for a norm weight or a bias, read as one row [1, n]).
 */
export interface WeightPart {
  name: string;
  dims: number[];
  init: PartInit;
  /** Added to every value (Gemma's norms scale by 1 + weight). */
  offset?: number;
}

/** How the parts of an assembled weight are joined: side by side (axis 1, columns) or stacked (axis 0, rows). */
export interface WeightAssembly {
  parts: WeightPart[];
  axis: 0 | 1;
}

function rowsCols(dims: readonly number[]): [number, number] {
  if (dims.length === 1) return [1, dims[0]!];
  if (dims.length === 2) return [dims[0]!, dims[1]!];
  throw new Error(`weight parts: a part is 1-D or 2-D, got [${dims.join(', ')}]`);
}

/** The assembled [rows, cols] of an assembly (the declared dims may add leading 1s). */
export function assembledRowsCols(assembly: WeightAssembly): [number, number] {
  const shapes = assembly.parts.map((p) => rowsCols(p.dims));
  if (assembly.axis === 1) {
    const rows = shapes[0]![0];
    if (shapes.some(([r]) => r !== rows)) throw new Error('weight parts: parts joined by columns must have the same rows');
    return [rows, shapes.reduce((n, [, c]) => n + c, 0)];
  }
  const cols = shapes[0]![1];
  if (shapes.some(([, c]) => c !== cols)) throw new Error('weight parts: parts stacked by rows must have the same columns');
  return [shapes.reduce((n, [r]) => n + r, 0), cols];
}

/**
 * The assembled weight from its parts' values (each in its part's row-major layout, in the order of
 * assembly.parts), row-major [rows, cols].
 */
export function assembleWeight(assembly: WeightAssembly, partValues: readonly Float32Array[]): Float32Array {
  if (partValues.length !== assembly.parts.length) throw new Error('weight parts: one value array per part');
  const [rows, cols] = assembledRowsCols(assembly);
  const out = new Float32Array(rows * cols);
  let at = 0;
  assembly.parts.forEach((part, i) => {
    const [r, c] = rowsCols(part.dims);
    const v = partValues[i]!;
    if (v.length !== r * c) throw new Error(`weight parts: ${part.name} has ${v.length} values, expected ${r * c}`);
    const offset = part.offset ?? 0;
    if (assembly.axis === 0) {
      for (let k = 0; k < v.length; k++) out[at * cols + k] = v[k]! + offset;
      at += r;
    } else {
      for (let row = 0; row < r; row++) for (let k = 0; k < c; k++) out[row * cols + at + k] = v[row * c + k]! + offset;
      at += c;
    }
  });
  return out;
}
