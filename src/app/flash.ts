/**
 * Flash notices: a change answers with a redirect (post, redirect, get), and the page it leads to says
 * what happened once. The notice travels in a short-lived cookie, not in the URL, so reloading or
 * sharing the page does not say it again. It is a key each page looks up in its own table of texts:
 * a cookie set by someone else can at most pick one of those texts.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { readCookie } from './respond.ts';

const FLASH_COOKIE = 'approvals_flash';
const KEY = /^[a-z][a-z0-9_-]{0,39}(:\d{1,9}){0,3}$/;

/**
 * Redirects to `url` (303), with `notice` for the next page under /app: a key, with an optional `:count`
 * (up to three: `classified:4:0:1`).
 */
export function redirectWithNotice(reply: FastifyReply, url: string, notice: string) {
  if (!KEY.test(notice)) throw new Error('a notice is a short key');
  return reply
    .header('Set-Cookie', `${FLASH_COOKIE}=${notice}; Path=/app; HttpOnly; SameSite=Lax; Max-Age=60`)
    .redirect(url, 303);
}

/** The notice a redirect left for this page, taken once: the answer clears it. `counts` when several. */
export function takeNotice(
  request: FastifyRequest,
  reply: FastifyReply,
): { key: string; count?: number; counts?: number[] } | null {
  const value = readCookie(request, FLASH_COOKIE);
  if (value === undefined) return null;
  reply.header('Set-Cookie', `${FLASH_COOKIE}=; Path=/app; HttpOnly; SameSite=Lax; Max-Age=0`);
  if (!KEY.test(value)) return null;
  const [key, ...numbers] = value.split(':');
  const counts = numbers.map(Number);
  if (counts.length === 0) return { key: key! };
  return { key: key!, count: counts[0]!, ...(counts.length > 1 && { counts }) };
}
