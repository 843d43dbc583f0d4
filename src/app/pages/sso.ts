/**
 * Sign-in with the workspace's identity provider: `/app/sso?workspace=<slug>` sends the browser to the
 * provider, which sends it back to `/app/sso/callback` (the redirect URI to register there).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { finishOidcSignIn, OIDC_PENDING_MINUTES, startOidcSignIn } from '../../services/oidc.ts';
import { SESSION_DAYS, SignInRefused } from '../../services/sign-in.ts';
import { appPath } from '../app-path.ts';
import { type PageDeps, problemPage, readCookie, sessionCookie } from '../respond.ts';

/** The sealed state, nonce and PKCE verifier of a sign-in under way, for this browser only. */
const PENDING_COOKIE = 'approvals_oidc';

const publicRoute = { config: { public: true } };

const pendingCookie = (deps: PageDeps, value: string, maxAgeSeconds: number) =>
  `${PENDING_COOKIE}=${encodeURIComponent(value)}; Path=/app/sso; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${deps.ctx.secureCookies ? '; Secure' : ''}`;

/** A sign-in the workspace or its provider refused, in words that say what to do. */
export const refusedPage = (reply: FastifyReply, error: SignInRefused) =>
  problemPage(reply, 403, 'Not signed in', error.message);

export function ssoPages(app: FastifyInstance, deps: PageDeps) {
  const { ctx, limitAnonymous } = deps;

  app.get<{ Querystring: { workspace?: string; next?: string } }>(
    '/app/sso',
    publicRoute,
    async (request, reply) => {
      if (!(await limitAnonymous(request, reply))) return reply;
      const slug = String(request.query.workspace ?? '')
        .trim()
        .toLowerCase()
        .slice(0, 63);
      try {
        const started = await startOidcSignIn(ctx, slug, appPath(request.query.next));
        if (!started)
          return problemPage(
            reply,
            404,
            'No identity provider',
            'No workspace of that short name signs in with an identity provider. Ask for a sign-in link by e-mail instead.',
          );
        return reply
          .header('Set-Cookie', pendingCookie(deps, started.pending, OIDC_PENDING_MINUTES * 60))
          .redirect(started.url, 303);
      } catch (error) {
        if (error instanceof SignInRefused) return problemPage(reply, 502, 'Not signed in', error.message);
        throw error;
      }
    },
  );

  app.get('/app/sso/callback', publicRoute, async (request, reply) => {
    if (!(await limitAnonymous(request, reply))) return reply;
    // Used up whatever happens: a second try starts again.
    const usedUp = pendingCookie(deps, '', 0);
    try {
      const at = request.url.indexOf('?');
      const { sessionId, next } = await finishOidcSignIn(
        ctx,
        readCookie(request, PENDING_COOKIE),
        at >= 0 ? request.url.slice(at) : '',
      );
      return reply
        .header('Set-Cookie', [usedUp, sessionCookie(ctx, sessionId, SESSION_DAYS * 86_400)])
        .redirect(next ?? '/app/inbox', 303);
    } catch (error) {
      if (error instanceof SignInRefused) return refusedPage(reply.header('Set-Cookie', usedUp), error);
      throw error;
    }
  });
}
