/** Builds the tiny test model once, before any worker starts (the model is generated, never committed). */
import { tinyModelDir } from './helpers/tiny-model.js';

export default async function setup(): Promise<void> {
  await tinyModelDir();
}
