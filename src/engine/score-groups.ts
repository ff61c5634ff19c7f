/**
 * A score call's input: groups of one shared prefix and its suffixes (the structured form used in
 * TypeScript), and flatten(), which lays them out as the flat typed arrays the native call takes.
 */
import { EngineError } from '../errors/engine-error.js';

/**
 * One question: its tokens after the shared prefix and the label tokens to score at its last token.
 * @example
 * const suffix: ScoreSuffix = { tokens: await tokenizer.encode('Refund? '), labels: Int32Array.from(['no', 'yes'].map((l) => tokenizer.tokenToId(l))) };
 */
export interface ScoreSuffix {
  /** The question's tokens; the label is read at the last of them. */
  tokens: Int32Array;
  /** Token ids whose logits are wanted (one per option). */
  labels: Int32Array;
}

/**
 * One state: a prefix computed once (or found in the prefix cache) and the questions asked about it.
 * @example
 * const group: ScoreGroup = { prefix: await tokenizer.encode('State: ...\n'), suffixes: [refundSuffix, topicSuffix] };
 */
export interface ScoreGroup {
  /** Tokens shared by every suffix of the group (system text + state). */
  prefix: Int32Array;
  suffixes: ScoreSuffix[];
  /**
   * Who may share this prefix's cached KV: a prefix is reused (from the prefix cache, or from an
   * identical group of the same call) only by groups of the same scope, so callers of different
   * scopes cannot learn each other's states from `cachedTokens` or from timing. An integer in
   * [0, 2^31); default 0.
   */
  cacheScope?: number;
}

const GROUP_FIELDS = ['prefix', 'suffixes', 'cacheScope'];
const SUFFIX_FIELDS = ['tokens', 'labels'];

/** A field the engine does not read is refused: a misspelt cacheScope would share the caller's states. */
function rejectUnknownFields(value: object, fields: readonly string[], where: string): void {
  for (const key of Object.keys(value)) {
    if (!fields.includes(key)) throw new EngineError('ERR_INPUT', `${where}: unknown field '${key.slice(0, 100)}' (fields: ${fields.join(', ')})`);
  }
}

function int32(value: unknown, what: string): Int32Array {
  if (!(value instanceof Int32Array)) throw new EngineError('ERR_INPUT', `${what} must be an Int32Array`);
  return value;
}

/** Structured groups -> the flat typed arrays the native side takes. */
export function flatten(groups: ScoreGroup[]) {
  if (!Array.isArray(groups)) throw new EngineError('ERR_INPUT', 'score(groups) needs an array of groups');
  let prefixLength = 0;
  let suffixLength = 0;
  let labelLength = 0;
  let suffixCount = 0;
  groups.forEach((group, g) => {
    if (typeof group !== 'object' || group === null || !Array.isArray(group.suffixes)) {
      throw new EngineError('ERR_INPUT', `group ${g} must be { prefix, suffixes: [...] }`);
    }
    rejectUnknownFields(group, GROUP_FIELDS, `groups[${g}]`);
    prefixLength += int32(group.prefix, `groups[${g}].prefix`).length;
    const scope = group.cacheScope;
    if (scope !== undefined && !(Number.isInteger(scope) && scope >= 0 && scope <= 0x7fffffff)) {
      throw new EngineError('ERR_INPUT', `groups[${g}].cacheScope must be an integer in [0, 2^31)`);
    }
    group.suffixes.forEach((suffix, s) => {
      if (typeof suffix === 'object' && suffix !== null) rejectUnknownFields(suffix, SUFFIX_FIELDS, `groups[${g}].suffixes[${s}]`);
      suffixLength += int32(suffix?.tokens, `groups[${g}].suffixes[${s}].tokens`).length;
      labelLength += int32(suffix?.labels, `groups[${g}].suffixes[${s}].labels`).length;
      suffixCount += 1;
    });
  });
  const prefixTokens = new Int32Array(prefixLength);
  const prefixOffsets = new Int32Array(groups.length + 1);
  const prefixScopes = new Int32Array(groups.length);
  const suffixTokens = new Int32Array(suffixLength);
  const suffixOffsets = new Int32Array(suffixCount + 1);
  const suffixGroup = new Int32Array(suffixCount);
  const labelIds = new Int32Array(labelLength);
  const labelOffsets = new Int32Array(suffixCount + 1);
  let p = 0;
  let t = 0;
  let l = 0;
  let s = 0;
  groups.forEach((group, g) => {
    prefixTokens.set(group.prefix, p);
    p += group.prefix.length;
    prefixOffsets[g + 1] = p;
    prefixScopes[g] = group.cacheScope ?? 0;
    for (const suffix of group.suffixes) {
      suffixTokens.set(suffix.tokens, t);
      t += suffix.tokens.length;
      labelIds.set(suffix.labels, l);
      l += suffix.labels.length;
      suffixGroup[s] = g;
      s += 1;
      suffixOffsets[s] = t;
      labelOffsets[s] = l;
    }
  });
  return { prefixTokens, prefixOffsets, prefixScopes, suffixTokens, suffixOffsets, suffixGroup, labelIds, labelOffsets };
}
