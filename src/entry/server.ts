/**
 * `decision-engine/server`: the HTTP service (fastify, OpenAPI, uploads) as a server to listen on
 * or a plugin to register in your own fastify app.
 */
export { createServer, decisionApp, type ServerOptions } from '../server/app.js';
