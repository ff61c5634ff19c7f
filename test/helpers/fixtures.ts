/**
 * Where the test fixtures that live beside the repository are: the tiny transformers-made
 * Hugging Face checkpoints (qwen3, qwen2, llama3 and their bf16 copies, each with
 * reference_logits.json).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));

/** DECIDE_HF_TINY_DIR, else where CI puts them: shared/fixtures/hf-tiny in the folder that holds the checkout. */
export const HF_TINY = process.env.DECIDE_HF_TINY_DIR ? path.resolve(process.env.DECIDE_HF_TINY_DIR) : path.join(REPO_ROOT, '..', 'shared', 'fixtures', 'hf-tiny');
