/**
 * `decision-engine/server`: the HTTP service (fastify, OpenAPI, uploads) as a server to listen on
 * or a plugin to register in your own fastify app.
 */
export { createServer, decisionApp, whenPreloaded, type ServerOptions, type DecisionAppOptions } from '../server/app.js';
// decisionApp's `keys` option: without it a dependent could not build the plugin's options.
export { ApiKeySet } from '../server/api-keys.js';
