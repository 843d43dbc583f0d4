/** Sign-in by one-time link, sign-out, and the first run's setup form. */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ServiceContext } from '../../services/context.ts';
import { describeSafely, ServiceError } from '../../services/errors.ts';
import { createFirstWorkspace, hasWorkspaces } from '../../services/first-run.ts';
import { oidcSignInOf } from '../../services/oidc.ts';
import {
  queueSignInMail,
  SESSION_DAYS,
  signIn,
  signInLinkUsable,
  SignInRefused,
  signOut,
} from '../../services/sign-in.ts';
import { appPath } from '../app-path.ts';
import { readLoginForm, readSetupForm } from '../forms/auth.ts';
import { validTry, mayTry } from '../guesses.ts';
import {
  type Form,
  type PageDeps,
  problemPage,
  readCookie,
  SESSION_COOKIE,
  sendPage,
  sessionCookie,
} from '../respond.ts';
import { loginPage, setupPage, signInLinkPage } from '../views/auth.ts';
import { refusedPage, ssoPages } from './sso.ts';

const SESSION_SECONDS = SESSION_DAYS * 86_400;

/** Where to go after signing in, kept from the login form until the link is used (as long as the link lives). */
const NEXT_COOKIE = 'approvals_next';
const NEXT_SECONDS = 15 * 60;

const publicRoute = { config: { public: true } };

const nextCookie = (ctx: ServiceContext, value: string, maxAgeSeconds: number) =>
  `${NEXT_COOKIE}=${value}; Path=/app/login; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${ctx.secureCookies ? '; Secure' : ''}`;

function setupPages(app: FastifyInstance, { ctx, limitAnonymous }: PageDeps) {
  // The service opened in a browser: the app (its first-run page on a new install).
  app.get('/', publicRoute, async (_request, reply) => reply.redirect('/app', 303));

  app.get('/app', publicRoute, async (request, reply) => {
    if (!(await hasWorkspaces(ctx))) return reply.redirect('/app/setup', 303);
    return reply.redirect(request.appSession ? '/app/inbox' : '/app/login', 303);
  });

  app.get('/app/setup', publicRoute, async (_request, reply) => {
    if (await hasWorkspaces(ctx)) return reply.redirect('/app/login', 303);
    return sendPage(reply, setupPage());
  });

  app.post<{ Body: Form }>('/app/setup', publicRoute, async (request, reply) => {
    if (!(await limitAnonymous(request, reply))) return reply;
    const values = readSetupForm(request.body);
    try {
      const { sessionId } = await createFirstWorkspace(ctx, {
        name: values.name,
        slug: values.slug,
        adminName: values.admin_name,
        adminEmail: values.admin_email,
      });
      return reply
        .header('Set-Cookie', sessionCookie(ctx, sessionId, SESSION_SECONDS))
        .redirect('/app/inbox', 303);
    } catch (error) {
      if (error instanceof ServiceError)
        return sendPage(reply, setupPage(error.message.replaceAll('\n', '; '), values), 422);
      throw error;
    }
  });
}

function loginPages(app: FastifyInstance, { ctx, limitAnonymous }: PageDeps) {
  app.get<{ Querystring: { next?: string; workspace?: string } }>(
    '/app/login',
    publicRoute,
    async (request, reply) => {
      if (!(await hasWorkspaces(ctx))) return reply.redirect('/app/setup', 303);
      // `?workspace=<slug>`: a link a company gives its people, with the button of its provider.
      const slug = request.query.workspace;
      const sso = typeof slug === 'string' ? await oidcSignInOf(ctx, slug.slice(0, 63)) : null;
      const provider = sso && { slug: sso.workspace.slug, name: sso.name };
      return sendPage(reply, loginPage(ctx, null, appPath(request.query.next), provider));
    },
  );

  app.post<{ Body: Form }>('/app/login', publicRoute, async (request, reply) => {
    if (!(await limitAnonymous(request, reply))) return reply;
    const { email, next } = readLoginForm(request.body);
    if (ctx.mailer && email) {
      // Looked up and queued only once the answer is out: its time and status are the same whether or
      // not the address is a member's, and the mail server's state cannot show through.
      reply.raw.once('finish', () => {
        queueSignInMail(ctx, email).catch((error: unknown) =>
          request.log.warn({ ...describeSafely(error) }, 'sign-in e-mail not queued'),
        );
      });
    }
    // Kept in this browser, whose sign-in link comes back to /app/login/<token>; said the same for
    // every address.
    if (next) reply.header('Set-Cookie', nextCookie(ctx, encodeURIComponent(next), NEXT_SECONDS));
    // The same answer whether or not the address is known.
    const message = ctx.mailer
      ? 'If this address belongs to a member, a sign-in link is on its way. It works once, for 15 minutes.'
      : 'E-mail is not set up on this service. Ask an admin for an invite link.';
    return sendPage(reply, loginPage(ctx, message));
  });
}

function signInLinkPages(app: FastifyInstance, deps: PageDeps) {
  const { ctx } = deps;
  // Unknown, used and expired links look the same here, and all count as a failed guess (not given back).
  const linkGone = (reply: FastifyReply) =>
    problemPage(
      reply,
      410,
      'Link used or expired',
      'This sign-in link has been used or has expired. Ask for a new one.',
    );

  // Opening the link shows a button: mail scanners that fetch links do not use it up.
  app.get<{ Params: { token: string } }>('/app/login/:token', publicRoute, async (request, reply) => {
    if (!(await mayTry(deps, request, reply))) return reply;
    if (!(await signInLinkUsable(ctx, request.params.token))) return linkGone(reply);
    await validTry(deps, request);
    return sendPage(reply, signInLinkPage(request.params.token));
  });

  app.post<{ Params: { token: string } }>('/app/login/:token', publicRoute, async (request, reply) => {
    if (!(await mayTry(deps, request, reply))) return reply;
    let session;
    try {
      session = await signIn(ctx, request.params.token);
    } catch (error) {
      if (error instanceof SignInRefused) return refusedPage(reply, error);
      throw error;
    }
    if (!session) return linkGone(reply);
    await validTry(deps, request);
    const kept = readCookie(request, NEXT_COOKIE);
    const cookies = [sessionCookie(ctx, session.sessionId, SESSION_SECONDS)];
    if (kept !== undefined) cookies.push(nextCookie(ctx, '', 0));
    return reply.header('Set-Cookie', cookies).redirect(appPath(kept) ?? '/app/inbox', 303);
  });

  app.post('/app/logout', async (request, reply) => {
    const sessionId = readCookie(request, SESSION_COOKIE);
    if (sessionId) await signOut(ctx, sessionId);
    return reply.header('Set-Cookie', sessionCookie(ctx, '', 0)).redirect('/app/login', 303);
  });
}

export function authPages(app: FastifyInstance, deps: PageDeps) {
  setupPages(app, deps);
  loginPages(app, deps);
  signInLinkPages(app, deps);
  ssoPages(app, deps);
}
