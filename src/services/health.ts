import { ping } from '../store/db.ts';
import type { ServiceContext } from './context.ts';

/** Throws when storage cannot answer a trivial query. */
export const storageReachable = (ctx: ServiceContext) => ping(ctx.db);
