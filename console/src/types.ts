// The wire shapes the console reads (docs/api.md; the server's TypeBox schemas are the source, and
// test/types/console-wire.ts holds these to them at type-check time).
export type QuestionType = 'noul' | 'choice' | 'score';

export interface Question {
  type: QuestionType;
  instructions: string;
  criteria?: Record<string, string>;
}

export interface DecideRequest {
  model: string;
  state: string | Record<string, unknown>;
  questions: Record<string, Question>;
}

export interface Answer {
  type: QuestionType;
  probs: Record<string, number>;
  top: string;
  confidence: number;
}

export interface DecideResponse {
  id: string;
  model: string;
  answers: Record<string, Answer>;
  usage: { input_tokens: number; cached_tokens: number };
}

export interface ReliabilityBin {
  confidence: number;
  accuracy: number;
  count: number;
  /** The 95% interval of the accuracy (absent in versions calibrated before it was recorded). */
  low?: number;
  high?: number;
}

export interface HeldOut {
  ece?: number;
  ece_before?: number;
  nll?: number;
  nll_before?: number;
  uniform_nll?: number;
  accuracy?: number;
  observations?: number;
  kept?: string;
  poor_fit?: string[];
  reliability?: { before: ReliabilityBin[]; after: ReliabilityBin[] };
}

export interface Model {
  id: string;
  alias?: string;
  loaded: boolean;
  status: 'ok' | 'broken';
  error?: string;
  calibrated: boolean;
  held_out_ece?: Record<string, number>;
  held_out?: Record<string, HeldOut>;
  calibrated_from?: string;
  calibrated_at?: string;
}

export interface ModelListing {
  data: Model[];
  aliases: Record<string, string>;
  incomplete?: Array<{ id: string; reason: string }>;
}

export type BatchStatus = 'queued' | 'in_progress' | 'completed' | 'failed' | 'cancelling' | 'cancelled' | 'expired';

export interface Batch {
  id: string;
  model: string;
  status: BatchStatus;
  progress: { total: number; completed: number; failed: number };
  created_at: string;
  completed_at: string | null;
  error?: { code: string; message: string };
}

export interface BatchValidation {
  model: string;
  records: number;
  valid: number;
  invalid: number;
  errors: Array<{ line: number; custom_id: string | null; code: string; message: string }>;
  errors_truncated: boolean;
}
