/**
 * A question's suffix (its prompt after the state, as token ids, and its label ids) by the
 * question's content: batch jobs ask the same questions of every record, and tokenizing them once
 * saves the tokenizer thread's time. Bounded in bytes, least recently used out first: a question
 * can be a megabyte of text (255 long options), so a count alone would let a client pin gigabytes
 * with questions that are refused anyway. Keys are hashes of the content, for the same reason.
 */
import { createHash } from 'node:crypto';

import type { CodeIds } from './labels.js';

export interface SuffixTokens {
  tokens: Int32Array;
  labels: Int32Array;
  shown: string[];
  codes?: CodeIds;
}

/** What the cache may hold: about 100,000 questions of 100 tokens. */
export const SUFFIX_CACHE_BYTES = 64 * 2 ** 20;
/** A map entry's own cost (key, record, promise), counted with its arrays. */
const ENTRY_OVERHEAD_BYTES = 256;

function bytesOf(suffix: SuffixTokens): number {
  const shown = suffix.shown.reduce((n, s) => n + 2 * s.length, 0);
  const codes = suffix.codes ? suffix.codes.letterIds.byteLength + suffix.codes.digitIds.byteLength : 0;
  return ENTRY_OVERHEAD_BYTES + suffix.tokens.byteLength + suffix.labels.byteLength + shown + codes;
}

interface Entry {
  made: Promise<SuffixTokens>;
  /** Counted once made (0 while it is being made). */
  bytes: number;
}

export class SuffixCache {
  private readonly entries = new Map<string, Entry>();
  private total = 0;

  constructor(private readonly budgetBytes = SUFFIX_CACHE_BYTES) {}

  /** The suffix of the question `content` describes: cached, or made by `make` (a failure is not kept). */
  get(content: string, make: () => Promise<SuffixTokens>): Promise<SuffixTokens> {
    const key = createHash('sha256').update(content).digest('base64');
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.made;
    }
    const entry: Entry = { made: make(), bytes: 0 };
    this.entries.set(key, entry);
    entry.made.then(
      (suffix) => {
        if (this.entries.get(key) !== entry) return; // evicted while it was being made
        entry.bytes = bytesOf(suffix);
        this.total += entry.bytes;
        this.evict();
      },
      () => {
        if (this.entries.get(key) === entry) this.entries.delete(key);
      },
    );
    return entry.made;
  }

  /** Bytes held by the suffixes made so far. */
  get bytes(): number {
    return this.total;
  }

  private evict(): void {
    for (const [key, entry] of this.entries) {
      if (this.total <= this.budgetBytes) return;
      this.entries.delete(key);
      this.total -= entry.bytes;
    }
  }
}
