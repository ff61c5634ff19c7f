/**
 * A dry run of a batch upload: every record of a staged file parsed and validated exactly as the
 * runner will (parseRecord, a large line in the record thread; one RecordContext for the whole
 * file, so duplicate custom_ids are found too), and its questions checked against the model
 * (`checkQuestions`: one the model cannot take even with an empty state), nothing created. POST /v1/batches/validate answers with it, so
 * a client (the console) can show the bad lines before it creates the job. What only scoring finds
 * (a state over the model's token limit) is not checked here.
 */
import { open } from 'node:fs/promises';

import { isApiError, type ApiError } from '../api/errors.js';
import type { BatchValidation } from '../api/schemas.js';
import type { NormalizedDecideRequest } from '../api/validate.js';
import { parseRecordOffMain } from './record-thread.js';
import { type RecordContext } from './records.js';
import { readLines } from './jsonl-lines.js';

/** Throws the ApiError of a valid record whose questions the model cannot take (BatchDecisionService.checkQuestions). */
export type QuestionCheck = (request: NormalizedDecideRequest) => Promise<void>;

/** The errors listed in one answer; the counts cover every record. */
export const MAX_LISTED_ERRORS = 100;

export async function validateUploadFile(file: string, ctx: RecordContext, checkQuestions?: QuestionCheck): Promise<Omit<BatchValidation, 'object' | 'model'>> {
  const fh = await open(file, 'r');
  let records = 0;
  let invalid = 0;
  const errors: BatchValidation['errors'] = [];
  const checked = new Map<string, Promise<ApiError | undefined>>();
  try {
    for await (const line of readLines(fh, { maxLineBytes: ctx.maxRecordBytes })) {
      if (line.blank) continue;
      records += 1;
      const parsed = await parseRecordOffMain(line, ctx);
      const error = parsed.ok ? await questionError(parsed.request, checkQuestions, checked) : parsed.error;
      if (error === undefined) continue;
      invalid += 1;
      if (errors.length < MAX_LISTED_ERRORS) {
        errors.push({ line: line.lineNo, custom_id: parsed.customId, code: error.code, message: error.message });
      }
    }
  } finally {
    await fh.close();
  }
  return { records, valid: records - invalid, invalid, errors, errors_truncated: invalid > errors.length };
}

/** Distinct question lists whose outcome a dry run keeps: a file's records mostly ask the same few. */
const MAX_CHECKED_QUESTION_LISTS = 4096;

/**
 * The record's question error, if any, checked once per distinct list of questions (`checked`):
 * a file of 50,000 records with the form's questions checks them once. Any other failure (the
 * model cannot load) fails the dry run.
 */
async function questionError(request: NormalizedDecideRequest, check: QuestionCheck | undefined, checked: Map<string, Promise<ApiError | undefined>>): Promise<ApiError | undefined> {
  if (!check) return undefined;
  const key = JSON.stringify(request.questions);
  let outcome = checked.get(key);
  if (!outcome) {
    outcome = check(request).then(
      () => undefined,
      (err: unknown) => {
        if (isApiError(err) && err.code === 'invalid_question') return err;
        throw err;
      },
    );
    if (checked.size >= MAX_CHECKED_QUESTION_LISTS) checked.clear();
    checked.set(key, outcome);
  }
  return outcome;
}
