/** Sign-in by one-time link, sign-out, and the first run's setup form. */
import type { FastifyInstance } from 'fastify';
import { describeSafely, ServiceError } from '../../services/errors.ts';
import { createFirstWorkspace, hasWorkspaces } from '../../services/first-run.ts';
import { queueSignInMail, SESSION_DAYS, signIn, signInLinkUsable, signOut } from '../../services/sign-in.ts';
import { html, when } from '../html.ts';
import { appPath } from '../app-path.ts';
import { layout } from '../layout.ts';
import { passkeySignInForm } from './passkeys.ts';
import {
  field,
  type Form,
  type PageDeps,
  problemPage,
  readCookie,
  SESSION_COOKIE,
  sendPage,
  sessionCookie,
} from '../respond.ts';

const SESSION_SECONDS = SESSION_DAYS * 86_400;

/** Where to go after signing in, kept from the login form until the link is used (as long as the link lives). */
const NEXT_COOKIE = 'approvals_next';
const NEXT_SECONDS = 15 * 60;

export function authPages(app: FastifyInstance, { ctx, limitAnonymous }: PageDeps) {
  const nextCookie = (value: string, maxAgeSeconds: number) =>
    `${NEXT_COOKIE}=${value}; Path=/app/login; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${ctx.secureCookies ? '; Secure' : ''}`;
  const publicRoute = { config: { public: true } };

  app.get('/app', publicRoute, async (request, reply) => {
    if (!(await hasWorkspaces(ctx))) return reply.redirect('/app/setup', 303);
    return reply.redirect(request.appSession ? '/app/inbox' : '/app/login', 303);
  });

  const setupForm = (error?: string, values: Record<string, string> = {}) =>
    layout(
      { title: 'Set up' },
      html`<div class="narrow card">
        <h1>Set up approvals</h1>
        <p>Create the first workspace and its admin. You are signed in as that admin afterwards.</p>
        ${when(error, () => html`<p class="error" role="alert">${error}</p>`)}
        <form method="post" action="/app/setup" class="decide">
          <label for="name">Workspace name</label
          ><input id="name" name="name" type="text" required maxlength="200" value="${values.name ?? ''}" />
          <label for="slug">Short name (lowercase letters, digits, dashes)</label
          ><input
            id="slug"
            name="slug"
            type="text"
            required
            pattern="[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
            value="${values.slug ?? ''}"
          />
          <label for="admin_name">Your name</label
          ><input
            id="admin_name"
            name="admin_name"
            type="text"
            required
            maxlength="200"
            value="${values.admin_name ?? ''}"
          />
          <label for="admin_email">Your e-mail</label
          ><input
            id="admin_email"
            name="admin_email"
            type="email"
            required
            value="${values.admin_email ?? ''}"
          />
          <div class="buttons"><button type="submit">Create workspace</button></div>
        </form>
      </div>`,
    );

  app.get('/app/setup', publicRoute, async (_request, reply) => {
    if (await hasWorkspaces(ctx)) return reply.redirect('/app/login', 303);
    return sendPage(reply, setupForm());
  });

  app.post<{ Body: Form }>('/app/setup', publicRoute, async (request, reply) => {
    if (!(await limitAnonymous(request, reply))) return reply;
    const values = {
      name: field(request.body, 'name'),
      slug: field(request.body, 'slug'),
      admin_name: field(request.body, 'admin_name'),
      admin_email: field(request.body, 'admin_email'),
    };
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
        return sendPage(reply, setupForm(error.message.replaceAll('\n', '; '), values), 422);
      throw error;
    }
  });

  const loginPage = (message: string | null, next: string | null = null) =>
    layout(
      { title: 'Sign in' },
      html`<div class="narrow card">
        <h1>Sign in</h1>
        ${message ? html`<p class="notice" role="status">${message}</p>` : null}
        <form method="post" action="/app/login" class="decide">
          ${when(next, () => html`<input type="hidden" name="next" value="${next}" />`)}
          <label for="email">E-mail</label
          ><input id="email" name="email" type="email" autocomplete="email" required />
          <div class="buttons"><button type="submit">Send me a sign-in link</button></div>
        </form>
        ${passkeySignInForm(ctx)}
        ${when(!ctx.mailer, () => html`<p class="muted">E-mail is not set up on this service. Ask an admin for an invite link (<code>npx approvals users invite</code>).</p>`)}
      </div>`,
    );

  app.get<{ Querystring: { next?: string } }>('/app/login', publicRoute, async (request, reply) => {
    if (!(await hasWorkspaces(ctx))) return reply.redirect('/app/setup', 303);
    return sendPage(reply, loginPage(null, appPath(request.query.next)));
  });

  app.post<{ Body: Form }>('/app/login', publicRoute, async (request, reply) => {
    if (!(await limitAnonymous(request, reply))) return reply;
    const email = field(request.body, 'email');
    if (ctx.mailer && /^[^\s@]+@[^\s@]+$/.test(email) && email.length <= 254) {
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
    const next = appPath(field(request.body, 'next'));
    if (next) reply.header('Set-Cookie', nextCookie(encodeURIComponent(next), NEXT_SECONDS));
    // The same answer whether or not the address is known.
    const message = ctx.mailer
      ? 'If this address belongs to a member, a sign-in link is on its way. It works once, for 15 minutes.'
      : 'E-mail is not set up on this service. Ask an admin for an invite link.';
    return sendPage(reply, loginPage(message));
  });

  // Opening the link shows a button: mail scanners that fetch links do not use it up.
  app.get<{ Params: { token: string } }>('/app/login/:token', publicRoute, async (request, reply) => {
    if (!(await limitAnonymous(request, reply))) return reply;
    if (!(await signInLinkUsable(ctx, request.params.token))) {
      return problemPage(
        reply,
        410,
        'Link used or expired',
        'This sign-in link has been used or has expired. Ask for a new one.',
      );
    }
    return sendPage(
      reply,
      layout(
        { title: 'Sign in' },
        html`<div class="narrow card">
          <h1>Sign in</h1>
          <form method="post" action="/app/login/${request.params.token}">
            <button type="submit">Continue to approvals</button>
          </form>
        </div>`,
      ),
    );
  });

  app.post<{ Params: { token: string } }>('/app/login/:token', publicRoute, async (request, reply) => {
    if (!(await limitAnonymous(request, reply))) return reply;
    const session = await signIn(ctx, request.params.token);
    if (!session) {
      return problemPage(
        reply,
        410,
        'Link used or expired',
        'This sign-in link has been used or has expired. Ask for a new one.',
      );
    }
    const kept = readCookie(request, NEXT_COOKIE);
    const cookies = [sessionCookie(ctx, session.sessionId, SESSION_SECONDS)];
    if (kept !== undefined) cookies.push(nextCookie('', 0));
    return reply.header('Set-Cookie', cookies).redirect(appPath(kept) ?? '/app/inbox', 303);
  });

  app.post('/app/logout', async (request, reply) => {
    const sessionId = readCookie(request, SESSION_COOKIE);
    if (sessionId) await signOut(ctx, sessionId);
    return reply.header('Set-Cookie', sessionCookie(ctx, '', 0)).redirect('/app/login', 303);
  });
}
