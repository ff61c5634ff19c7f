// GET /v1/batches answers each job in the dialect it was created in: ours ({progress, ISO times})
// or, for a job created through OpenAI's Batch API, OpenAI's ({request_counts, Unix times};
// docs/compatibility.md). The Batches page shows both as ours.
import type { Batch, BatchStatus } from './types.js';

interface OpenAiBatch {
  id: string;
  model: string;
  status: string;
  request_counts: { total: number; completed: number; failed: number };
  created_at: number;
  completed_at: number | null;
  failed_at: number | null;
  cancelled_at: number | null;
  expired_at: number | null;
  errors?: { data: Array<{ code: string; message: string }> } | null;
}

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

function statusOf(openai: string): BatchStatus {
  if (openai === 'validating' || openai === 'finalizing') return 'in_progress';
  return openai as BatchStatus;
}

export function asBatch(wire: Batch | OpenAiBatch): Batch & { dialect: 'ours' | 'openai' } {
  if (!('request_counts' in wire)) return { ...wire, dialect: 'ours' };
  const end = wire.completed_at ?? wire.failed_at ?? wire.cancelled_at ?? wire.expired_at;
  const error = wire.errors?.data[0];
  return {
    id: wire.id,
    model: wire.model,
    status: statusOf(wire.status),
    progress: wire.request_counts,
    created_at: iso(wire.created_at),
    completed_at: end === null ? null : iso(end),
    ...(wire.status === 'failed' && error ? { error: { code: error.code, message: error.message } } : {}),
    dialect: 'openai',
  };
}
