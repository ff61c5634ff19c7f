#!/usr/bin/env node
// The `decide` command. The implementation lives in src/cli (compiled to dist/src/cli by npm run build).
import { main } from '../dist/src/cli/main.js';

main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`decide: ${err?.message ?? err}\n`);
    process.exitCode = 1;
  },
);
