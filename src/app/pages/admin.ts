/** Admin pages: registered here, one module each. */
import type { FastifyInstance } from 'fastify';
import type { PageDeps } from '../plugin.ts';

export function adminPages(_app: FastifyInstance, _deps: PageDeps) {}
