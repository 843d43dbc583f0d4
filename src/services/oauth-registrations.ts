/**
 * Open client registration (RFC 7591) is open to anyone, so what it keeps is bounded: a client that no
 * member has allowed expires a day after it registered (refused from then on, deleted by the deadline
 * worker's sweep), and an address keeps at most UNUSED_CLIENTS_PER_ADDRESS such clients at once. A client
 * a member allowed is kept while a grant names it (store/oauth.ts, `keepOAuthClient`).
 *
 * "An address" is an IPv4 address, or an IPv6 address's /64: one network (a home, a server) is given a
 * /64 and may send from any of its 2^64 addresses. The bound is counted and the client stored in one
 * transaction, under a lock of the address's group on PostgreSQL (SQLite's write transactions run one
 * at a time), so registrations sent at once cannot all pass the count before any is stored.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import ipaddr from 'ipaddr.js';
import { errors } from 'oidc-provider';
import type { Sql } from '../store/db.ts';
import { countUnusedOAuthClients } from '../store/oauth.ts';
import type { ServiceContext } from './context.ts';

/** A registration is a few redirect URIs and names: more than this is not one. */
export const REGISTRATION_BYTES = 4 * 1024;
/** A client registered and never allowed by a member expires this long after it registered. */
export const UNUSED_CLIENT_HOURS = 24;
/** Clients never used that one address may keep at once; each frees its place when used or expired. */
export const UNUSED_CLIENTS_PER_ADDRESS = 20;

/** The advisory lock's first key, the second being the group's hash (7294001 to 7294003 are single keys elsewhere). */
const REGISTRATION_LOCK = 7294004;

/**
 * What an address's registrations are counted by: an IPv4 address itself (also written as an IPv6
 * mapped one), an IPv6 address's /64 (`2001:db8:1:2::/64`). Text that is no address counts as itself.
 */
export function registrationGroup(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  return `${ipaddr.IPv6.networkAddressFromCIDR(`${parsed.toString()}/64`).toString()}/64`;
}

interface Registering {
  /** The address group (`registrationGroup`) the registration comes from. */
  group: string;
  /** Told when the registration is refused for want of room, with the seconds until a place frees up. */
  refused: (retryAfterSeconds: number) => void;
}

/**
 * The address a registration comes from, for the OAuth library's storage to record with the client:
 * the library stores the client inside its own request handling, which runs within `registeringFrom`.
 */
const source = new AsyncLocalStorage<Registering>();
export const registeringFrom = <T>(address: string, refused: Registering['refused'], run: () => Promise<T>) =>
  source.run({ group: registrationGroup(address), refused }, run);
export const registrationSource = () => source.getStore()?.group ?? null;

export const tooManyRegistrationsDescription = () =>
  `this address has ${UNUSED_CLIENTS_PER_ADDRESS} client registrations never used; each expires ${UNUSED_CLIENT_HOURS} hours after it registered, or is kept once a member allows it`;

async function roomIn(
  sql: Sql,
  group: string,
  now: number,
): Promise<{ allowed: true } | { allowed: false; retryAfterSeconds: number }> {
  const { count, soonest } = await countUnusedOAuthClients(sql, group, now);
  if (count < UNUSED_CLIENTS_PER_ADDRESS) return { allowed: true };
  return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(((soonest ?? now) - now) / 1000)) };
}

/**
 * Whether `address` may register one more client, and if not, in how many seconds a place frees up:
 * asked before the library reads the registration, so that most refusals cost nothing.
 * `storeRegisteredClient` asks again as it stores the client, and that answer is the one that counts.
 */
export const registrationRoom = (ctx: ServiceContext, address: string) =>
  roomIn(ctx.db, registrationGroup(address), ctx.now());

/**
 * Stores a client being registered (`store`, with the transaction) if its address group has room, in
 * one transaction with the count; otherwise stores nothing and throws RFC 7591's error, a 429.
 */
export async function storeRegisteredClient(
  ctx: ServiceContext,
  store: (sql: Sql) => Promise<void>,
): Promise<void> {
  const registering = source.getStore();
  if (!registering) return store(ctx.db);
  const room = await ctx.db.transaction(async (tx) => {
    if (ctx.db.dialect === 'postgres')
      await tx.one('SELECT pg_advisory_xact_lock($1::integer, hashtext($2))', [
        REGISTRATION_LOCK,
        registering.group,
      ]);
    const room = await roomIn(tx, registering.group, ctx.now());
    if (room.allowed) await store(tx);
    return room;
  });
  if (room.allowed) return;
  registering.refused(room.retryAfterSeconds);
  const refusal = new errors.CustomOIDCProviderError(
    'too_many_registrations',
    tooManyRegistrationsDescription(),
  );
  refusal.status = refusal.statusCode = 429;
  throw refusal;
}
