/**
 * What a batch created in OpenAI's dialect (`POST /v1/batches` with a JSON body) keeps beside the
 * common job fields: the endpoint its lines call, the input file, the completion window and the
 * metadata. Stored with the job as one JSON text column (`openai`, null for jobs of our multipart
 * dialect), so a job answers in the dialect it was created in on every host and after a restart.
 */
export interface OpenAiJobFields {
  /** '/v1/decide', '/v1/systemone' or '/v1/decisions': every line's `url`. */
  endpoint: string;
  inputFileId: string;
  completionWindow: string;
  metadata: Record<string, string> | null;
}

export function openAiFieldsToText(fields: OpenAiJobFields | null | undefined): string | null {
  return fields ? JSON.stringify(fields) : null;
}

export function openAiFieldsFromText(text: string | null | undefined): OpenAiJobFields | null {
  return text ? (JSON.parse(text) as OpenAiJobFields) : null;
}
