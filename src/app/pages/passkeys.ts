/**
 * Passkeys (`/app/settings/passkeys`): a member enrols and removes their own passkeys, and signs in with
 * one on the sign-in page. The browser side is `static/passkey.js`; the WebAuthn checks are the
 * service's (`services/passkey-enrolment.ts`, `services/passkey-sign-in.ts`). Nobody manages another
 * member's passkeys, admins included.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ServiceContext } from '../../services/context.ts';
import { ServiceError } from '../../services/errors.ts';
import {
  enrolmentLinkUsable,
  enrolmentOptions,
  enrolPasskey,
  listMemberPasskeys,
  removePasskey,
  sendEnrolmentLink,
} from '../../services/passkey-enrolment.ts';
import { signInOptions, signInWithPasskey } from '../../services/passkey-sign-in.ts';
import {
  type AuthenticationResponseJSON,
  type RegistrationResponseJSON,
  relyingParty,
} from '../../services/passkeys.ts';
import { type AppSession, SESSION_DAYS, SignInRefused } from '../../services/sign-in.ts';
import { refusedPage } from './sso.ts';
import { redirectWithNotice, takeNotice } from '../flash.ts';
import { readEnrolForm, readRemoveForm, readSignInForm } from '../forms/passkeys.ts';
import { mayTry, validTry } from '../guesses.ts';
import { checkLimit } from '../../web/rate-limiter.ts';
import { type Form, type PageDeps, problemPage, sendPage, sessionCookie } from '../respond.ts';
import { enrolLinkView, passkeysView } from '../views/passkeys.ts';
import { adminPage } from './admin/shared.ts';

const PAGE = '/app/settings/passkeys';

const NOTICES: Record<string, string> = {
  enrolled: 'Passkey added. You can sign in with it, and approvals that need a signature ask for it.',
  link_sent: 'A link to add a passkey is on its way to your e-mail. It works once, for 15 minutes.',
  removed: 'Passkey removed.',
};

async function sendPasskeys(
  ctx: ServiceContext,
  reply: FastifyReply,
  session: AppSession,
  { status = 200, notice = null as string | null, problems = [] as string[] } = {},
) {
  const body = passkeysView(
    session,
    await listMemberPasskeys(ctx, session.member),
    !!relyingParty(ctx),
    problems,
  );
  return sendPage(
    reply,
    await adminPage(ctx, session, { title: 'Passkeys', active: 'settings', notice }, body),
    status,
  );
}

/** A refusal the member can act on: the page again, saying why; nothing was changed. */
function refused(ctx: ServiceContext, reply: FastifyReply, session: AppSession, error: unknown) {
  if (!(error instanceof ServiceError)) throw error;
  const message = error.issues[0] ? `Not added: the passkey ${error.issues[0].message}.` : error.message;
  return sendPasskeys(ctx, reply, session, { status: 422, problems: [message] });
}

/** The options a WebAuthn ceremony starts from, as JSON; 409 when passkeys cannot work here. */
async function sendOptions(reply: FastifyReply, options: () => Promise<unknown>) {
  try {
    return reply.header('Cache-Control', 'no-store').send(await options());
  } catch (error) {
    if (error instanceof ServiceError) return reply.code(409).send({ error: 'conflict' });
    throw error;
  }
}

function memberPages(app: FastifyInstance, ctx: ServiceContext) {
  app.get(PAGE, async (request, reply) => {
    const notice = NOTICES[takeNotice(request, reply)?.key ?? ''] ?? null;
    return sendPasskeys(ctx, reply, request.appSession!, { notice });
  });

  app.post(`${PAGE}/options`, async (request, reply) =>
    sendOptions(reply, () => enrolmentOptions(ctx, request.appSession!)),
  );

  app.post<{ Body: Form }>(PAGE, async (request, reply) => {
    const session = request.appSession!;
    const form = readEnrolForm(request.body);
    try {
      await enrolPasskey(ctx, session, { ...form, response: form.response as RegistrationResponseJSON });
    } catch (error) {
      return refused(ctx, reply, session, error);
    }
    return redirectWithNotice(reply, PAGE, 'enrolled');
  });

  app.post<{ Body: Form }>(`${PAGE}/remove`, async (request, reply) => {
    const session = request.appSession!;
    if (!(await removePasskey(ctx, session, readRemoveForm(request.body).id)))
      return problemPage(reply, 404, 'Not found', 'You have no such passkey.', session);
    return redirectWithNotice(reply, PAGE, 'removed');
  });

  app.post(`${PAGE}/link`, async (request, reply) => {
    const session = request.appSession!;
    try {
      await sendEnrolmentLink(ctx, session);
    } catch (error) {
      if (!(error instanceof ServiceError)) throw error;
      return sendPasskeys(ctx, reply, session, { status: 409, problems: [error.message] });
    }
    return redirectWithNotice(reply, PAGE, 'link_sent');
  });

  // The e-mailed link: for the member it was sent to, signed in (else the sign-in page brings them back).
  app.get<{ Params: { token: string } }>(`${PAGE}/enrol/:token`, async (request, reply) => {
    const session = request.appSession!;
    if (!(await enrolmentLinkUsable(ctx, session.member, request.params.token)))
      return problemPage(
        reply,
        410,
        'Link used or expired',
        'This link has been used, has expired, or was sent to someone else. Ask for a new one on your Passkeys page.',
        session,
      );
    const body = enrolLinkView(session, request.params.token);
    return sendPage(
      reply,
      await adminPage(ctx, session, { title: 'Add a passkey', active: 'settings' }, body),
    );
  });
}

// A passkey sign-in counts against the address only when it fails (`guesses.ts`).
/** Sign-in ceremonies an address may start a minute: an office's people, not a script's thousands. */
const OPTIONS_LIMIT = 120;
function signInPages(app: FastifyInstance, deps: PageDeps) {
  const { ctx } = deps;
  const publicRoute = { config: { public: true } };

  // Options are no guess, but each stores a ceremony: counted in a bucket of their own, generous for an office.
  app.post('/app/login/passkey/options', publicRoute, async (request, reply) => {
    const limit = await checkLimit(
      deps.counter,
      `ip:${request.ip}:passkey-options`,
      OPTIONS_LIMIT,
      ctx.now(),
    );
    if (!limit.allowed) {
      reply.header('Retry-After', String(limit.resetSeconds));
      return problemPage(
        reply,
        429,
        'Too many requests',
        'Too many passkey sign-ins from this network. Wait a minute.',
      );
    }
    return sendOptions(reply, () => signInOptions(ctx));
  });

  app.post<{ Body: Form }>('/app/login/passkey', publicRoute, async (request, reply) => {
    if (!(await mayTry(deps, request, reply))) return reply;
    const form = readSignInForm(request.body);
    const session = await signInWithPasskey(ctx, {
      ceremony: form.ceremony,
      response: form.response as AuthenticationResponseJSON,
    }).catch((error: unknown) => {
      // A workspace that requires its identity provider takes passkeys from admins only.
      if (error instanceof SignInRefused) return error;
      throw error;
    });
    if (session instanceof SignInRefused) return refusedPage(reply, session);
    if (!session)
      return problemPage(
        reply,
        401,
        'Not signed in',
        'That passkey could not sign you in here. Try again, or ask for a sign-in link by e-mail.',
      );
    await validTry(deps, request);
    return reply
      .header('Set-Cookie', sessionCookie(ctx, session.sessionId, SESSION_DAYS * 86_400))
      .redirect('/app/inbox', 303);
  });
}

export function passkeyPages(app: FastifyInstance, deps: PageDeps) {
  memberPages(app, deps.ctx);
  signInPages(app, deps);
}
