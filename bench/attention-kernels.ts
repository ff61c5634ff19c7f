/**
 * Which attention kernel ONNX Runtime's CUDA provider picked, run by run: its ONNX Attention kernel
 * says so in the process's verbose log ("ONNX Attention: using Flash Attention (...)", "... using
 * Memory Efficient Attention (...)", "... using cuDNN SDPA", or "Attention: using unified unfused
 * path (...)"), which `--ort-log-level 0` turns on. decide gpu-report counts them, so that a card's
 * figures say whether the fused kernels ran or the unfused fallback did.
 */
import { readFileSync, writeFileSync } from 'node:fs';

/** Kernel name -> how many attention node runs picked it. */
export type AttentionKernelCounts = Record<string, number>;

const DISPATCH = /(?:ONNX Attention: using (Flash Attention|Memory Efficient Attention|cuDNN SDPA)|Attention: using (unified unfused path))/;

/** Counts the dispatch lines of a log's text. */
export function countAttentionKernels(text: string): AttentionKernelCounts {
  const counts: AttentionKernelCounts = {};
  for (const line of text.split('\n')) {
    const m = DISPATCH.exec(line);
    if (m === null) continue;
    const kernel = m[1] ?? m[2]!;
    counts[kernel] = (counts[kernel] ?? 0) + 1;
  }
  return counts;
}

/**
 * Counts the dispatch lines of a step's log, then keeps in the file only its own lines and those
 * (ONNX Runtime's other verbose lines run to megabytes, and a GPU host hands back little).
 */
export function summarizeAttentionLog(logFile: string): AttentionKernelCounts {
  const text = readFileSync(logFile, 'utf8');
  const kept = text.split('\n').filter((line) => DISPATCH.test(line) || !/\[[VIWEF]:onnxruntime:/.test(line));
  writeFileSync(logFile, kept.join('\n'));
  return countAttentionKernels(text);
}
