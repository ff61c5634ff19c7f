// Scores one state with three questions directly through the Engine (no HTTP, no prompt template):
// the state is the shared prefix, each question a suffix, and the answer is read from the logits
// of one label token per option.
//   node bin/decide.js make-model --preset tiny --out models/tiny
//   node examples/engine-demo.mjs models/tiny
import { Engine, TextTokenizer } from 'decision-engine';

const modelDir = process.argv[2] ?? 'models/tiny';
const tokenizer = await TextTokenizer.load(modelDir);
const engine = await Engine.load({ modelDir });

const state = 'Ticket #1182: my card was charged twice for the same order and I want my money back.';
const questions = [
  { text: 'Is the customer asking for a refund? Answer yes or no.', labels: ['no', 'yes'] },
  { text: 'Topic? A. payments B. delivery C. other. Answer A, B or C.', labels: ['A', 'B', 'C'] },
  { text: 'Urgency from 0 (low) to 2 (high)? Answer 0, 1 or 2.', labels: ['0', '1', '2'] },
];

const prefix = await tokenizer.encode(`State: ${state}\n`);
const suffixes = await Promise.all(
  questions.map(async (q) => ({
    tokens: await tokenizer.encode(`Question: ${q.text}\nAnswer: `),
    labels: Int32Array.from(q.labels.map((label) => tokenizer.tokenToId(label))),
  })),
);

const [scores] = await engine.score([{ prefix, suffixes }]);
scores.forEach((score, i) => {
  const max = Math.max(...score.labelLogits);
  const exp = Array.from(score.labelLogits, (x) => Math.exp(x - max));
  const sum = exp.reduce((a, b) => a + b, 0);
  const probs = Object.fromEntries(questions[i].labels.map((label, k) => [label, +(exp[k] / sum).toFixed(4)]));
  console.log(questions[i].text, probs);
});
console.log(engine.counters());
engine.close();
