/**
 * Open client registration (RFC 7591) is open to anyone, so what it keeps is bounded: a client that no
 * member has allowed expires a day after it registered (refused from then on, deleted by the deadline
 * worker's sweep), and an address keeps at most UNUSED_CLIENTS_PER_ADDRESS such clients at once. A client
 * a member allowed is kept while a grant names it (store/oauth.ts, `keepOAuthClient`).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { countUnusedOAuthClients } from '../store/oauth.ts';
import type { ServiceContext } from './context.ts';

/** A registration is a few redirect URIs and names: more than this is not one. */
export const REGISTRATION_BYTES = 4 * 1024;
/** A client registered and never allowed by a member expires this long after it registered. */
export const UNUSED_CLIENT_HOURS = 24;
/** Clients never used that one address may keep at once; each frees its place when used or expired. */
export const UNUSED_CLIENTS_PER_ADDRESS = 20;

/**
 * The address a registration comes from, for the OAuth library's storage to record with the client:
 * the library stores the client inside its own request handling, which runs within `registeringFrom`.
 */
const source = new AsyncLocalStorage<string>();
export const registeringFrom = <T>(address: string, run: () => Promise<T>) => source.run(address, run);
export const registrationSource = () => source.getStore() ?? null;

/** Whether `address` may register one more client, and if not, in how many seconds a place frees up. */
export async function registrationRoom(
  ctx: ServiceContext,
  address: string,
): Promise<{ allowed: true } | { allowed: false; retryAfterSeconds: number }> {
  const now = ctx.now();
  const { count, soonest } = await countUnusedOAuthClients(ctx.db, address, now);
  if (count < UNUSED_CLIENTS_PER_ADDRESS) return { allowed: true };
  return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(((soonest ?? now) - now) / 1000)) };
}
