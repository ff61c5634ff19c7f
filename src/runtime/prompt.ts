// Prompt rendering: one chat per (state, question), split into a PREFIX shared by every question
// of the same state and a per-question SUFFIX that ends right where the answer label goes.
//
//   chat    = [system: SYSTEM_TEXT, user: stateText + STATE_SEPARATOR + questionBlock]
//             rendered by the model's chat template with add_generation_prompt = true and
//             enable_thinking = false (Qwen3 then writes an empty <think></think> block)
//   prefix  = render(...) up to and including stateText + STATE_SEPARATOR
//   suffix  = questionBlock + the rest of the render (the generation prompt) + answerCue
//   input   = encode(prefix) ++ encode(suffix); the next token is the label
//
// The split comes from rendering once with a random sentinel in place of the question block.
// Every render is checked: the sentinel occurs once, the state sits right before it, and the text
// after it (the "tail") is the same for every state. A template for which that does not hold
// fails loudly instead of producing prompts that differ from what the template would render.
//
// Text from the caller (state, instructions, descriptions, keys) is neutralized: any occurrence
// of one of the tokenizer's added tokens (e.g. "<|im_end|>") gets a WORD JOINER (U+2060) after
// its first character, so caller text can never produce control tokens and break out of its turn.
import { randomBytes } from 'node:crypto';
import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { optionText, type QuestionType } from '../domain/decision.js';
import { MODEL_FILES } from '../engine/model-dir.js';
import { EngineError } from '../errors/engine-error.js';
import { LETTERS } from './labels.js';
import { renderBounded } from './template-limits.js';

/** The system message of every decision prompt. */
export const SYSTEM_TEXT =
  'You answer questions about a state. The user message gives the state, then a question and ' +
  'its options, each option with a label. Reply with the label of the option that best answers ' +
  'the question, and nothing else: no other words, no punctuation, no explanation.';

/** Between the state and the question block; the prefix ends with it. */
export const STATE_SEPARATOR = '\n\n---\n\n';

/** ChatML, used when tokenizer_config.json has no chat_template. */
export const FALLBACK_CHAT_TEMPLATE =
  "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

const WORD_JOINER = '\u2060';

export interface PromptOption {
  key: string;
  description?: string;
}

export interface PromptQuestion {
  type: QuestionType;
  instructions: string;
  /** In presentation order; one label per option. */
  options: readonly PromptOption[];
}

export interface PromptRendererOptions {
  /** System message; default SYSTEM_TEXT. */
  systemText?: string;
  /** Text appended after the generation prompt, right before the label; default '' (the label is the reply's first token). */
  answerCue?: string;
  /**
   * Strings caller text must never contain verbatim (the tokenizer's added tokens). Default for
   * `load`: the contents of `added_tokens_decoder` and the special-token fields of
   * tokenizer_config.json, else the `added_tokens` of tokenizer.json.
   */
  reservedTokens?: readonly string[];
  /** Extra template variables such as bos_token / eos_token (load() reads them from tokenizer_config.json). */
  templateVariables?: Readonly<Record<string, unknown>>;
}

type SystemMode = 'system' | 'inline';

const SPECIAL_TOKEN_FIELDS = ['bos_token', 'eos_token', 'pad_token', 'unk_token', 'sep_token', 'cls_token', 'mask_token'];

function tokenContent(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string') {
    return (v as { content: string }).content;
  }
  return undefined;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Renders decision prompts with a model's chat template.
 *
 * @example
 * const renderer = await PromptRenderer.load(modelDir);
 * const prefix = renderer.renderPrefix(req.stateText);             // once per state
 * const suffix = renderer.renderSuffix(question, ['A', 'B', 'C']); // once per question
 * const ids = [...(await tok.encode(prefix)), ...(await tok.encode(suffix))];
 */
export class PromptRenderer {
  /** True when the model has no chat_template and ChatML is used. */
  readonly usesFallbackTemplate: boolean;
  /** The text every suffix ends with (generation prompt + answer cue); labels are checked in this context. */
  readonly labelContext: string;

  private readonly template: Template;
  private readonly systemText: string;
  private readonly answerCue: string;
  private readonly variables: Readonly<Record<string, unknown>>;
  private readonly reserved: RegExp | undefined;
  private readonly sentinel: string;
  private readonly systemMode: SystemMode;
  private readonly tail: string;

  constructor(chatTemplate: string | undefined, options: PromptRendererOptions = {}) {
    this.usesFallbackTemplate = !chatTemplate;
    try {
      this.template = new Template(chatTemplate || FALLBACK_CHAT_TEMPLATE);
    } catch (err) {
      throw new EngineError('ERR_MODEL_LOAD', `prompt: the chat_template cannot be parsed: ${(err as Error).message}`, { cause: err });
    }
    this.systemText = options.systemText ?? SYSTEM_TEXT;
    this.answerCue = options.answerCue ?? '';
    this.variables = options.templateVariables ?? {};
    const reserved = [...new Set(options.reservedTokens ?? [])].filter((t) => t.length >= 2);
    reserved.sort((a, b) => b.length - a.length);
    this.reserved = reserved.length ? new RegExp(reserved.map(escapeRegExp).join('|'), 'g') : undefined;
    this.sentinel = `[[QUESTION_BLOCK_${randomBytes(12).toString('hex')}]]`;

    // Templates that refuse a system role (raise_exception) get the system text inline, at the
    // start of the user message: still part of the shared prefix.
    let mode: SystemMode = 'system';
    try {
      this.render('probe', mode);
    } catch {
      mode = 'inline';
    }
    const split = this.splitRender('The state goes here.', mode);
    this.systemMode = mode;
    this.tail = split.after;
    this.labelContext = this.tail + this.answerCue;
  }

  /** Reads `<modelDir>/tokenizer_config.json` (chat_template, special tokens) and builds the renderer. */
  static async load(modelDir: string, options: PromptRendererOptions = {}): Promise<PromptRenderer> {
    const configPath = join(modelDir, MODEL_FILES.tokenizerConfig);
    let config: Record<string, unknown> = {};
    try {
      config = JSON.parse(await readFile(configPath, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new EngineError('ERR_MODEL_LOAD', `prompt: cannot read ${configPath}: ${(err as Error).message}`, { cause: err });
      }
    }
    let template: string | undefined;
    const ct = config.chat_template;
    if (typeof ct === 'string') template = ct;
    else if (Array.isArray(ct)) {
      const named = ct as Array<{ name?: unknown; template?: unknown }>;
      const def = named.find((t) => t.name === 'default') ?? named[0];
      if (typeof def?.template === 'string') template = def.template;
    }

    const variables: Record<string, unknown> = {};
    for (const f of SPECIAL_TOKEN_FIELDS) {
      const c = tokenContent(config[f]);
      if (c !== undefined) variables[f] = c;
    }
    let reserved = options.reservedTokens;
    if (!reserved) {
      const fromConfig = Object.values((config.added_tokens_decoder ?? {}) as Record<string, unknown>)
        .map(tokenContent)
        .filter((c): c is string => c !== undefined);
      if (fromConfig.length === 0) reserved = await readAddedTokens(join(modelDir, MODEL_FILES.tokenizer));
      else reserved = [...fromConfig, ...Object.values(variables).filter((v): v is string => typeof v === 'string')];
    }
    return new PromptRenderer(template, {
      ...options,
      reservedTokens: reserved,
      templateVariables: { ...variables, ...options.templateVariables },
    });
  }

  /** Caller text with every reserved token broken by a WORD JOINER after its first character. */
  neutralize(text: string): string {
    const re = this.reserved;
    if (!re) return text;
    // Breaking one token cannot create another one unless tokens overlap oddly; loop until stable.
    let out = text;
    for (let i = 0; i < 8; i++) {
      const next = out.replace(re, (m) => m[0] + WORD_JOINER + m.slice(1));
      if (next === out) return out;
      out = next;
    }
    return out;
  }

  /** The shared prefix for a state: system text, chat markup and the state, ending with STATE_SEPARATOR. */
  renderPrefix(stateText: string): string {
    const { before, after } = this.splitRender(stateText, this.systemMode);
    if (after !== this.tail) {
      throw new EngineError('ERR_RUNTIME', 'prompt: the chat template renders a different ending for this state; prefix reuse is not possible');
    }
    return before;
  }

  /** The question block as it appears in the user message. */
  renderQuestionBlock(question: PromptQuestion, labels: readonly string[]): string {
    if (labels.length !== question.options.length) {
      throw new EngineError('ERR_RUNTIME', `prompt: ${labels.length} labels for ${question.options.length} options`);
    }
    const lines = [`Question: ${this.neutralize(question.instructions)}`];
    const described = question.options.some((o) => o.description !== undefined && o.description.trim() !== '');
    // noul without descriptions needs no option list: the labels are the words no / yes.
    if (question.type !== 'noul' || described) {
      lines.push('', 'Options:');
      question.options.forEach((o, i) => lines.push(`${labels[i]}. ${this.neutralize(optionText(o))}`));
    }
    // Codes (more than 26 options) are listed on the option lines only: naming all of them again
    // would add three tokens per option to every such prompt.
    if (labels.length > LETTERS.length) lines.push('', `Answer with the code of one option, a letter and a digit: one of ${labels[0]} to ${labels.at(-1)}`);
    else lines.push('', `Answer with one of: ${labels.join(', ')}`);
    return lines.join('\n');
  }

  /** The per-question suffix: question block, the rest of the chat, the answer cue. */
  renderSuffix(question: PromptQuestion, labels: readonly string[]): string {
    return this.renderQuestionBlock(question, labels) + this.labelContext;
  }

  /** The whole chat rendered in one piece by the template (for checks and debugging; equals prefix + suffix). */
  renderFull(stateText: string, question: PromptQuestion, labels: readonly string[]): string {
    const user = this.neutralize(stateText) + STATE_SEPARATOR + this.renderQuestionBlock(question, labels);
    return this.render(user, this.systemMode) + this.answerCue;
  }

  private render(userContent: string, mode: SystemMode): string {
    const messages =
      mode === 'system'
        ? [
            { role: 'system', content: this.systemText },
            { role: 'user', content: userContent },
          ]
        : [{ role: 'user', content: `${this.systemText}\n\n${userContent}` }];
    return renderBounded(this.template, {
      ...this.variables,
      messages,
      add_generation_prompt: true,
      enable_thinking: false,
    });
  }

  private splitRender(stateText: string, mode: SystemMode): { before: string; after: string } {
    const state = this.neutralize(stateText);
    const rendered = this.render(state + STATE_SEPARATOR + this.sentinel, mode);
    const at = rendered.indexOf(this.sentinel);
    if (at < 0 || rendered.lastIndexOf(this.sentinel) !== at) {
      throw new EngineError('ERR_RUNTIME', 'prompt: the chat template must render the user message exactly once, unchanged');
    }
    const before = rendered.slice(0, at);
    if (!before.endsWith(state + STATE_SEPARATOR)) {
      throw new EngineError('ERR_RUNTIME', 'prompt: the chat template changed the state text or did not put it right before the question');
    }
    return { before, after: rendered.slice(at + this.sentinel.length) };
  }
}

async function readAddedTokens(path: string): Promise<string[]> {
  try {
    await access(path);
  } catch {
    return [];
  }
  const json = JSON.parse(await readFile(path, 'utf8')) as { added_tokens?: Array<{ content?: unknown }> };
  return (json.added_tokens ?? []).map((t) => t.content).filter((c): c is string => typeof c === 'string');
}
