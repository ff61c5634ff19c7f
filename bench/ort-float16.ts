/**
 * float16 tensors for onnxruntime-node, from raw fp16 bits, on every Node line.
 *
 * Where the runtime has Float16Array (Node 24 and newer), onnxruntime-common turns Uint16Array data
 * of a 'float16' tensor into a Float16Array view, and onnxruntime-node's binding (1.30) then reads
 * that view's byte length as 0 and refuses the input: "not enough space: expected N, got 0"
 * (microsoft/onnxruntime#32323). The binding reads a Uint16Array correctly, so the tensor is given
 * back the Uint16Array it was made from.
 */
import * as ort from 'onnxruntime-node';

export function float16Tensor(bits: Uint16Array, dims: readonly number[]): ort.Tensor {
  const tensor = new ort.Tensor('float16', bits, dims);
  if (!(tensor.data instanceof Uint16Array)) (tensor as unknown as { cpuData: Uint16Array }).cpuData = bits;
  return tensor;
}
