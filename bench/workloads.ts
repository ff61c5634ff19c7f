/**
 * The benchmark workloads: generated states (bench/text.ts) with typed questions, turned into token
 * ids by the real request pipeline (validateDecideRequest, then ModelRuntime.prepare: prompt
 * rendering, tokenization, label choice), and packed into engine calls the way the scheduler
 * coalesces live requests (whole requests until DEFAULT_SCHEDULER_OPTIONS.maxCallTokens).
 *
 *   tickets   many short states (~300 tokens), 8 questions each (choice, noul and score mixed)
 *   document  few long states (~1,500 tokens), 13 questions each
 *   single    short states with ONE question each: no reuse possible beyond the shared system prompt
 */
import type { DecideRequest, Question } from '../src/api/schemas.js';
import { validateDecideRequest, type NormalizedDecideRequest } from '../src/api/validate.js';
import type { ScoreGroup } from '../src/engine/engine.js';
import type { ModelRuntime, PreparedRequest } from '../src/runtime/model-runtime.js';
import { DEFAULT_SCHEDULER_OPTIONS } from '../src/runtime/scheduler.js';
import { documentPieces, textOfTokens, ticketPieces, TextRng } from './text.js';

export const WORKLOAD_NAMES = ['tickets', 'document', 'single'] as const;
export type WorkloadName = (typeof WORKLOAD_NAMES)[number];

export interface WorkloadSpec {
  name: WorkloadName;
  states: number;
  /** State length in model tokens (the state text alone, before the prompt template). */
  stateTokens: number;
  questionsPerState: number;
  description: string;
}

/**
 * Number of states per workload. Sized so that the default run (check pass + 3 timed repetitions of
 * both systems) takes about 6 minutes on an idle 2-vCPU machine and --quick under 2 minutes; the
 * baseline's document passes dominate (2 x 13 rows of ~1,650 tokens).
 */
export function workloadSpecs(quick: boolean): Record<WorkloadName, WorkloadSpec> {
  return {
    tickets: {
      name: 'tickets',
      states: quick ? 2 : 12,
      stateTokens: 300,
      questionsPerState: 8,
      description: 'support tickets (~300 tokens), 8 questions each: choice, noul, score',
    },
    document: {
      name: 'document',
      states: quick ? 1 : 2,
      stateTokens: 1500,
      questionsPerState: 13,
      description: 'business documents (~1,500 tokens), 13 questions each',
    },
    single: {
      name: 'single',
      states: quick ? 4 : 24,
      stateTokens: 300,
      questionsPerState: 1,
      description: 'support tickets (~300 tokens), 1 question each (no reuse within a state)',
    },
  };
}

const TICKET_QUESTIONS: Record<string, Question> = {
  category: {
    type: 'choice',
    instructions: 'Which team should handle this ticket?',
    criteria: {
      billing: 'Charges, invoices, refunds, credits or plan changes',
      technical: 'The product does not work as expected: errors, crashes, connectivity, sync',
      account: 'Login, passwords, user management or account settings',
      shipping: 'Orders, deliveries, returns of physical goods',
      other: 'Anything else',
    },
  },
  urgency: {
    type: 'score',
    instructions: 'How urgent is this ticket for the customer\'s business? 1 is not urgent, 5 is business-critical.',
    criteria: { '1': 'Not urgent', '2': 'Minor inconvenience', '3': 'Noticeable impact', '4': 'Serious impact', '5': 'Business-critical' },
  },
  refund: { type: 'noul', instructions: 'Does the customer ask for a refund, a credit or a cancellation?' },
  sentiment: {
    type: 'choice',
    instructions: 'What is the customer\'s mood in their latest message?',
    criteria: { positive: 'Satisfied or thankful', neutral: 'Matter-of-fact', frustrated: 'Annoyed but cooperative', angry: 'Hostile or threatening to leave' },
  },
  escalate: {
    type: 'noul',
    instructions: 'Should this ticket be escalated to a team lead?',
    criteria: {
      no: 'The agent can resolve it with the usual steps',
      yes: 'Repeated contact, a promise not kept, a threat to cancel, or a problem the agent cannot fix',
    },
  },
  resolved: { type: 'noul', instructions: 'Is the problem resolved at the end of the thread?' },
  churn: {
    type: 'score',
    instructions: 'How likely is the customer to cancel within the next month? 0 is very unlikely, 3 is very likely.',
    criteria: { '0': 'Very unlikely', '1': 'Unlikely', '2': 'Likely', '3': 'Very likely' },
  },
  next_action: {
    type: 'choice',
    instructions: 'What should the agent do next?',
    criteria: {
      reply: 'Reply in writing with instructions or information',
      call: 'Call the customer',
      engineering: 'Open a bug report for the engineering team',
      credit: 'Issue a refund or credit',
      close: 'Close the ticket',
    },
  },
};

const DOCUMENT_QUESTIONS: Record<string, Question> = {
  kind: {
    type: 'choice',
    instructions: 'What kind of document is this?',
    criteria: {
      msa: 'Master services agreement',
      dpa: 'Data processing addendum',
      security: 'Vendor security assessment',
      lease: 'Lease agreement',
      license: 'Software license agreement',
    },
  },
  auto_renewal: { type: 'noul', instructions: 'Does the agreement renew automatically?' },
  governing_law: {
    type: 'choice',
    instructions: 'Which law governs the agreement?',
    criteria: { us: 'A US state', uk: 'England and Wales', eu: 'An EU member state', canada: 'A Canadian province', singapore: 'Singapore', none: 'Not stated' },
  },
  breach_72h: { type: 'noul', instructions: 'Must personal data breaches be notified within 72 hours or less?' },
  liability_cap: {
    type: 'choice',
    instructions: 'How is the supplier\'s liability limited?',
    criteria: {
      fees_12: 'To the fees of the last 12 months',
      fees_other: 'To the fees of another period',
      fixed: 'To a fixed amount',
      unlimited: 'Not limited',
      not_stated: 'The document does not say',
    },
  },
  risk: {
    type: 'score',
    instructions: 'Overall, how risky is this agreement for the customer? 1 is low risk, 5 is high risk.',
    criteria: { '1': 'Low', '2': 'Moderate', '3': 'Elevated', '4': 'High', '5': 'Very high' },
  },
  convenience: { type: 'noul', instructions: 'May the customer terminate for convenience?' },
  data_location: {
    type: 'choice',
    instructions: 'Where is personal data stored?',
    criteria: { eu: 'European Union', us: 'United States', uk: 'United Kingdom', other: 'Elsewhere', not_stated: 'Not stated' },
  },
  sla: {
    type: 'score',
    instructions: 'Which monthly availability does the supplier commit to, in percent?',
    criteria: { '0': 'No commitment', '99.5': '99.5 percent', '99.9': '99.9 percent', '99.95': '99.95 percent' },
  },
  subprocessors: {
    type: 'noul',
    instructions: 'Must the customer be notified before a new subprocessor is engaged?',
    criteria: { no: 'No notice is required', yes: 'Notice is required' },
  },
  certification: {
    type: 'choice',
    instructions: 'Which security certifications does the supplier hold?',
    criteria: { iso: 'ISO/IEC 27001 only', soc2: 'SOC 2 only', both: 'Both ISO/IEC 27001 and SOC 2', none: 'None mentioned' },
  },
  payment_days: {
    type: 'score',
    instructions: 'Within how many days must invoices be paid?',
    criteria: { '10': '10 days', '14': '14 days', '30': '30 days', '45': '45 days', '60': '60 days', '90': '90 days' },
  },
  favourable: {
    type: 'score',
    instructions: 'How favourable are the terms to the customer overall? 1 is very unfavourable, 5 is very favourable.',
    criteria: { '1': 'Very unfavourable', '2': 'Unfavourable', '3': 'Balanced', '4': 'Favourable', '5': 'Very favourable' },
  },
};

export interface BenchItem {
  /** The wire request, as a client would send it. */
  request: DecideRequest;
  normalized: NormalizedDecideRequest;
  prepared: PreparedRequest;
}

export interface WorkloadTokens {
  states: number;
  decisions: number;
  /** Sum of prefix lengths (system text + state, once per state). */
  prefixTokens: number;
  /** Distinct prefix tokens (token trie over the prefixes): what remains when the system prompt that all states share is counted once. */
  prefixTokensDistinct: number;
  /** Sum of suffix lengths (one per question). */
  suffixTokens: number;
  /** What fresh scoring computes: every (state, question) as prefix + suffix. */
  freshTokens: number;
  /**
   * What perfect prefix reuse computes: the distinct prefixes of all rows (the nodes of a token trie
   * over every row's prefix + suffix), so a state is computed once and the system prompt that all
   * states share is computed once.
   */
  idealTokens: number;
  /** freshTokens / idealTokens. */
  idealSpeedup: number;
  meanPrefixTokens: number;
  meanSuffixTokens: number;
}

export interface Workload {
  spec: WorkloadSpec;
  items: BenchItem[];
  /** Engine calls: consecutive items packed up to the scheduler's maxCallTokens. */
  calls: BenchItem[][];
  tokens: WorkloadTokens;
}

/** The model id in generated requests (the runtime is loaded under this id). */
export const BENCH_MODEL_ID = 'bench';

/** Builds one workload's requests and token ids; deterministic from `seed`. */
export async function buildWorkload(spec: WorkloadSpec, runtime: ModelRuntime, seed: number, countTokens: (text: string) => Promise<number>): Promise<Workload> {
  const items: BenchItem[] = [];
  const ticketIds = Object.keys(TICKET_QUESTIONS);
  for (let s = 0; s < spec.states; s++) {
    const rng = new TextRng(seed, `${spec.name}/${s}`);
    const pieces = spec.name === 'document' ? documentPieces(rng) : ticketPieces(rng);
    const state = await textOfTokens(pieces, spec.stateTokens, countTokens);
    let questions: Record<string, Question>;
    if (spec.name === 'document') {
      questions = DOCUMENT_QUESTIONS;
    } else if (spec.name === 'tickets') {
      questions = TICKET_QUESTIONS;
    } else {
      const id = ticketIds[s % ticketIds.length]!;
      questions = { [id]: TICKET_QUESTIONS[id]! };
    }
    const ids = Object.keys(questions).slice(0, spec.questionsPerState);
    const request: DecideRequest = { model: BENCH_MODEL_ID, state, questions: Object.fromEntries(ids.map((id) => [id, questions[id]!])) };
    const normalized = validateDecideRequest(request);
    const prepared = await runtime.prepare(normalized);
    items.push({ request, normalized, prepared });
  }
  return { spec, items, calls: packCalls(items, DEFAULT_SCHEDULER_OPTIONS.maxCallTokens), tokens: countWorkloadTokens(items) };
}

/** Consecutive items into calls of at most `maxTokens` input tokens (at least one item per call). */
export function packCalls(items: BenchItem[], maxTokens: number): BenchItem[][] {
  const calls: BenchItem[][] = [];
  let current: BenchItem[] = [];
  let tokens = 0;
  for (const item of items) {
    if (current.length > 0 && tokens + item.prepared.inputTokens > maxTokens) {
      calls.push(current);
      current = [];
      tokens = 0;
    }
    current.push(item);
    tokens += item.prepared.inputTokens;
  }
  if (current.length > 0) calls.push(current);
  return calls;
}

export function groupsOf(call: BenchItem[]): ScoreGroup[] {
  return call.map((item) => item.prepared.group);
}

/** Every row of the workload as one full sequence (prefix ++ suffix). */
export function freshRows(items: BenchItem[]): Int32Array[] {
  const rows: Int32Array[] = [];
  for (const item of items) {
    const { prefix, suffixes } = item.prepared.group;
    for (const s of suffixes) {
      const row = new Int32Array(prefix.length + s.tokens.length);
      row.set(prefix);
      row.set(s.tokens, prefix.length);
      rows.push(row);
    }
  }
  return rows;
}

function compareIds(a: Int32Array, b: Int32Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

function commonPrefix(a: Int32Array, b: Int32Array): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** Nodes of the token trie over `rows`: sorted, each row adds what it does not share with its predecessor. */
export function trieTokens(rows: Int32Array[]): number {
  const sorted = [...rows].sort(compareIds);
  let total = 0;
  sorted.forEach((row, i) => {
    total += row.length - (i > 0 ? commonPrefix(row, sorted[i - 1]!) : 0);
  });
  return total;
}

export function countWorkloadTokens(items: BenchItem[]): WorkloadTokens {
  let prefixTokens = 0;
  let suffixTokens = 0;
  let freshTokens = 0;
  let decisions = 0;
  for (const item of items) {
    const { prefix, suffixes } = item.prepared.group;
    prefixTokens += prefix.length;
    for (const s of suffixes) {
      suffixTokens += s.tokens.length;
      freshTokens += prefix.length + s.tokens.length;
      decisions += 1;
    }
  }
  const idealTokens = trieTokens(freshRows(items));
  const prefixTokensDistinct = trieTokens(items.map((item) => item.prepared.group.prefix));
  const stateTokens = items.reduce((n, item) => n + item.prepared.group.prefix.length, 0);
  return {
    states: items.length,
    decisions,
    prefixTokens,
    prefixTokensDistinct,
    suffixTokens,
    freshTokens,
    idealTokens,
    idealSpeedup: freshTokens / idealTokens,
    meanPrefixTokens: stateTokens / Math.max(1, items.length),
    meanSuffixTokens: suffixTokens / Math.max(1, decisions),
  };
}
