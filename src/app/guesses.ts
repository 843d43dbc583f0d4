/**
 * The per-address budget for guessing at the app's secrets (decision links, sign-in links, passkey
 * sign-ins): 20 failed tries a minute (the anonymous quota), counted apart from the address's other
 * anonymous requests. A valid one costs nothing, so an office of approvers behind one address is never
 * slowed down; see `checkGuesses` in web/rate-limiter.ts.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ANONYMOUS_LIMIT } from '../web/guard.ts';
import { checkGuesses, countFailedGuess } from '../web/rate-limiter.ts';
import { type PageDeps, problemPage } from './respond.ts';

const keyOf = (request: FastifyRequest) => `ip:${request.ip}:guesses`;

/** Whether the address may try a secret; otherwise a 429 page with Retry-After has been sent. */
export async function mayTry(
  { ctx, counter }: PageDeps,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<boolean> {
  const limit = await checkGuesses(counter, keyOf(request), ANONYMOUS_LIMIT, ctx.now());
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

/** Counts a try that failed (a link unknown, used or expired; a passkey that did not sign in) against the address. */
export const countFailedTry = ({ ctx, counter }: PageDeps, request: FastifyRequest) =>
  countFailedGuess(counter, keyOf(request), ctx.now());
