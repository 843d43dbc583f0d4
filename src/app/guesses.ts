/**
 * The per-address budget for guessing at the app's secrets (decision links, sign-in links, passkey
 * sign-ins): 20 failed tries a minute (the anonymous quota), counted apart from the address's other
 * anonymous requests. Each try is counted before the secret is looked up and a valid one is given back,
 * so an office of approvers behind one address is never slowed down; see `countGuess` in
 * web/rate-limiter.ts.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ANONYMOUS_LIMIT } from '../web/guard.ts';
import { countGuess, refundGuess } from '../web/rate-limiter.ts';
import { type PageDeps, problemPage } from './respond.ts';

const keyOf = (request: FastifyRequest) => `ip:${request.ip}:guesses`;

/** Counts a try at a secret: whether the address may make it; otherwise a 429 page with Retry-After has been sent. */
export async function mayTry(
  { ctx, counter }: PageDeps,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<boolean> {
  const limit = await countGuess(counter, keyOf(request), ANONYMOUS_LIMIT, ctx.now());
  if (limit.allowed) return true;
  reply.header('Retry-After', String(limit.resetSeconds));
  await problemPage(
    reply,
    429,
    'Too many requests',
    'Too many links or sign-ins that were not valid came from this network in the last minute. Wait a minute and try again.',
    request.appSession,
  );
  return false;
}

/** Gives back the try `mayTry` counted: the secret was valid (a link known, a passkey that signed in). */
export const validTry = ({ ctx, counter }: PageDeps, request: FastifyRequest) =>
  refundGuess(counter, keyOf(request), ctx.now());
