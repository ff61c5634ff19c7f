/**
 * The web console's static files at /console (public: the page holds no data; every API call it
 * makes carries the user's key). Built by `npm run build:console` (scripts/build-console.mjs) into
 * dist/console: index.html and assets/<name>-<hash>.<ext>, read into memory once at start.
 *   GET /console, /console/<anything else>  index.html (the console routes in the browser), no-cache
 *   GET /console/assets/<file>              the asset, cached for a year (its name changes with its content)
 * Every answer, errors included, carries a strict Content-Security-Policy: scripts, styles and
 * requests from this origin only, no inline script, no frames, no forms posting elsewhere.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import type { FastifyPluginAsync, FastifyReply } from 'fastify';

import { ApiError } from '../api/errors.js';

export const CONSOLE_PATH = '/console';

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.map': 'application/json; charset=utf-8',
  '.woff2': 'font/woff2',
};
const ASSET_NAME = /^[A-Za-z0-9_-]+\.[A-Za-z0-9.]+$/;

/** dist/console of this package, from src/server (vitest) or dist/src/server (the build). */
export function defaultConsoleDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return path.join(dir, 'dist', 'console');
}

interface ConsoleFiles {
  index: Buffer;
  assets: Map<string, { body: Buffer; type: string }>;
}

function loadConsole(dir: string): ConsoleFiles | undefined {
  const indexFile = path.join(dir, 'index.html');
  if (!existsSync(indexFile)) return undefined;
  const assets = new Map<string, { body: Buffer; type: string }>();
  const assetDir = path.join(dir, 'assets');
  if (existsSync(assetDir)) {
    for (const name of readdirSync(assetDir)) {
      const type = CONTENT_TYPES[path.extname(name)];
      if (type && ASSET_NAME.test(name)) assets.set(name, { body: readFileSync(path.join(assetDir, name)), type });
    }
  }
  return { index: readFileSync(indexFile), assets };
}

function secure(reply: FastifyReply): void {
  reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY');
}

export const consoleRoutes: FastifyPluginAsync<{ dir?: string }> = async (app, opts) => {
  const files = loadConsole(opts.dir ?? defaultConsoleDir());
  const route = { config: { public: true }, schema: { hide: true } };
  // On send, not in each handler: the answers the error handler writes (an unknown asset's 404, the
  // 503 of an unbuilt console) carry the headers too. The hook is this plugin's, so its routes only.
  app.addHook('onSend', async (_request, reply, payload) => {
    secure(reply);
    return payload;
  });

  const page = async (_request: unknown, reply: FastifyReply) => {
    if (!files) {
      throw new ApiError('server_error', 'the console is not built: run `npm run build:console` in the package, then restart', { status: 503 });
    }
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(files.index);
  };
  app.get(CONSOLE_PATH, route, page);
  app.get(`${CONSOLE_PATH}/*`, route, page);

  app.get<{ Params: { file: string } }>(`${CONSOLE_PATH}/assets/:file`, route, async (request, reply) => {
    const asset = files?.assets.get(request.params.file);
    if (!asset) throw new ApiError('not_found', `no console asset ${JSON.stringify(request.params.file.slice(0, 100))}`);
    return reply.type(asset.type).header('cache-control', 'public, max-age=31536000, immutable').send(asset.body);
  });
};
