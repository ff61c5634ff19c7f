/**
 * Bounded chat-template rendering. A model's chat template is code from the checkpoint, and the
 * Jinja interpreter (@huggingface/jinja) runs it without limits: `range(100000000)` builds a
 * hundred-million-element array, a nested loop runs for minutes, `'x' * 10**8` makes a 100 MB
 * string. Real templates need a few thousand evaluation steps and render a few kilobytes around
 * the state text. renderBounded() stops a render that goes far past that, with an error that says
 * which limit it hit, so importing or loading a hostile template fails at once instead of taking
 * the CPU and memory.
 *
 * The interpreter has one dispatch method, `evaluate`, that every node goes through, and every
 * loop iteration sets a variable; both are wrapped once here to count steps and check the clock
 * (and the size of each value evaluate returns). The wrapper
 * does nothing unless a bounded render is running (rendering is synchronous, so one budget at a
 * time). The global `range` is swapped, as each render declares it, for a version that refuses
 * huge ranges before building them.
 */
import { Environment, Interpreter, type Template } from '@huggingface/jinja';

import { EngineError } from '../errors/engine-error.js';

export const TEMPLATE_LIMITS = {
  /** Interpreter steps per render (a real template on a long conversation needs thousands). */
  steps: 1_000_000,
  /** Wall-clock time per render. */
  milliseconds: 5_000,
  /** Characters of any string a render produces along the way (the state text is inside it). */
  characters: 64 * 2 ** 20,
  /** Elements of one range(). */
  rangeItems: 100_000,
} as const;

interface Budget {
  steps: number;
  deadline: number;
}

let budget: Budget | undefined;

function limitError(what: string): EngineError {
  return new EngineError('ERR_RUNTIME', `prompt: the chat template ${what}; refusing to render it (a hostile or broken template)`);
}

type Statement = Parameters<Interpreter['evaluate']>[0];
type Scope = Parameters<Interpreter['evaluate']>[1];
const evaluate = Interpreter.prototype.evaluate;
/** One step of the running bounded render, if any: throws once it is over its steps or its time. */
function step(): void {
  const b = budget;
  if (b === undefined) return;
  b.steps -= 1;
  if (b.steps < 0) throw limitError(`needs more than ${TEMPLATE_LIMITS.steps} evaluation steps`);
  if ((b.steps & 0xfff) === 0 && Date.now() > b.deadline) throw limitError(`runs longer than ${TEMPLATE_LIMITS.milliseconds} ms`);
}

Interpreter.prototype.evaluate = function boundedEvaluate(this: Interpreter, statement: Statement, environment: Scope) {
  if (budget === undefined) return evaluate.call(this, statement, environment);
  step();
  const result = evaluate.call(this, statement, environment);
  const value = (result as { value?: unknown }).value;
  if (typeof value === 'string' && value.length > TEMPLATE_LIMITS.characters) throw limitError(`builds a string of more than ${TEMPLATE_LIMITS.characters} characters`);
  return result;
};

/** Python's range(), refusing more than TEMPLATE_LIMITS.rangeItems elements before building any. */
function boundedRange(start: number, stop?: number, step = 1): number[] {
  if (stop === undefined) {
    stop = start;
    start = 0;
  }
  if (step === 0) throw new Error('range() step must not be zero');
  const count = Math.max(0, Math.ceil((stop - start) / step));
  if (!Number.isFinite(count) || count > TEMPLATE_LIMITS.rangeItems) throw limitError(`asks for range() of ${count} elements (at most ${TEMPLATE_LIMITS.rangeItems})`);
  return Array.from({ length: count }, (_, i) => start + i * step);
}

// A for loop with an empty body evaluates nothing per iteration, but sets its `loop` variable:
// each variable set is a step too, so nested empty loops are bounded as well.
const assign = Environment.prototype.setVariable;
Environment.prototype.setVariable = function boundedSetVariable(this: Environment, name: string, value: Parameters<Environment['setVariable']>[1]) {
  step();
  return assign.call(this, name, value);
};

// The library declares its global range() in each render's environment; in a bounded render the
// declaration gets boundedRange instead (a variable cannot be declared twice, so it is swapped here).
const setVariable = Environment.prototype.set;
Environment.prototype.set = function boundedSet(this: Environment, name: string, value: unknown) {
  return setVariable.call(this, name, budget !== undefined && name === 'range' ? boundedRange : value);
};

/**
 * template.render(variables) within TEMPLATE_LIMITS; throws EngineError ERR_RUNTIME naming the
 * limit a render exceeds.
 */
export function renderBounded(template: Template, variables: Record<string, unknown>): string {
  const previous = budget;
  budget = { steps: TEMPLATE_LIMITS.steps, deadline: Date.now() + TEMPLATE_LIMITS.milliseconds };
  try {
    const out = template.render(variables);
    if (out.length > TEMPLATE_LIMITS.characters) throw limitError(`renders more than ${TEMPLATE_LIMITS.characters} characters`);
    return out;
  } finally {
    budget = previous;
  }
}
