/**
 * The library surface: import { DecisionService, Engine } from 'decision-engine'. It loads no HTTP
 * stack (fastify, swagger, multipart): the server is `decision-engine/server`. The subpaths
 * `decision-engine/engine` and `decision-engine/service` load only their layer.
 */
export * from './entry/engine.js';
export * from './entry/service.js';
