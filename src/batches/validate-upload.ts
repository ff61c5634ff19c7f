/**
 * A dry run of a batch upload: every record of a staged file parsed and validated exactly as the
 * runner will (parseRecord, a large line in the record thread; one RecordContext for the whole
 * file, so duplicate custom_ids are found too), nothing created. POST /v1/batches/validate answers with it, so a client (the
 * console) can show the bad lines before it creates the job. What only scoring finds (a state over
 * the model's token limit) is not checked here.
 */
import { open } from 'node:fs/promises';

import type { BatchValidation } from '../api/schemas.js';
import { parseRecordOffMain } from './record-thread.js';
import { type RecordContext } from './records.js';
import { readLines } from './jsonl-lines.js';

/** The errors listed in one answer; the counts cover every record. */
export const MAX_LISTED_ERRORS = 100;

export async function validateUploadFile(file: string, ctx: RecordContext): Promise<Omit<BatchValidation, 'object' | 'model'>> {
  const fh = await open(file, 'r');
  let records = 0;
  let invalid = 0;
  const errors: BatchValidation['errors'] = [];
  try {
    for await (const line of readLines(fh, { maxLineBytes: ctx.maxRecordBytes })) {
      if (line.blank) continue;
      records += 1;
      const parsed = await parseRecordOffMain(line, ctx);
      if (parsed.ok) continue;
      invalid += 1;
      if (errors.length < MAX_LISTED_ERRORS) {
        errors.push({ line: line.lineNo, custom_id: parsed.customId, code: parsed.error.code, message: parsed.error.message });
      }
    }
  } finally {
    await fh.close();
  }
  return { records, valid: records - invalid, invalid, errors, errors_truncated: invalid > errors.length };
}
