/**
 * The OpenAI-dialect fields of a job (OpenAiJobFields, ports.ts) as the one JSON text column both
 * stores keep them in (`openai`, null for jobs of our multipart dialect).
 */
import type { OpenAiJobFields } from '../ports.js';

export type { OpenAiJobFields };

export function openAiFieldsToText(fields: OpenAiJobFields | null | undefined): string | null {
  return fields ? JSON.stringify(fields) : null;
}

export function openAiFieldsFromText(text: string | null | undefined): OpenAiJobFields | null {
  return text ? (JSON.parse(text) as OpenAiJobFields) : null;
}
