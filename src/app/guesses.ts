/**
 * The per-address budget for guessing at the app's secret links (decision links, sign-in links):
 * 20 failed guesses a minute (the anonymous quota), counted apart from the address's other anonymous
 * requests. A valid link costs nothing, so an office of approvers behind one address is never slowed
 * down; see `checkGuesses` in web/rate-limiter.ts.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ANONYMOUS_LIMIT } from '../web/guard.ts';
import { checkGuesses, countFailedGuess } from '../web/rate-limiter.ts';
import { type PageDeps, problemPage } from './respond.ts';

const keyOf = (request: FastifyRequest) => `ip:${request.ip}:link-guesses`;

/** Whether the address may try a link; otherwise a 429 page with Retry-After has been sent. */
export async function mayTryLink(
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
    'Too many links that are not valid were tried from this network in the last minute. Wait a minute and try again.',
    request.appSession,
  );
  return false;
}

/** Counts a link that was not valid (unknown, used or expired) against the address. */
export const countBadLink = ({ ctx, counter }: PageDeps, request: FastifyRequest) =>
  countFailedGuess(counter, keyOf(request), ctx.now());
