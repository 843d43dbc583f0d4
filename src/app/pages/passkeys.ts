/**
 * Passkeys (`/app/settings/passkeys`): a member enrols and removes their own passkeys, and signs in with
 * one on the sign-in page. The browser side is `static/passkey.js`; the WebAuthn checks are the
 * service's (`services/passkeys.ts`). Nobody manages another member's passkeys, admins included.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ServiceContext } from '../../services/context.ts';
import { ServiceError } from '../../services/errors.ts';
import {
  enrolmentOptions,
  enrolPasskey,
  listMemberPasskeys,
  type RegistrationResponseJSON,
  relyingParty,
  enrolmentLinkUsable,
  removePasskey,
  sendEnrolmentLink,
  signInOptions,
  signInWithPasskey,
  type AuthenticationResponseJSON,
} from '../../services/passkeys.ts';
import { SESSION_DAYS, type AppSession } from '../../services/sign-in.ts';
import { type Html, html, time, when } from '../html.ts';
import { field, type Form, type PageDeps, problemPage, sendPage, sessionCookie } from '../respond.ts';
import { PASSKEY_SCRIPT as SCRIPT } from '../views/passkey.ts';
import { adminPage } from './admin/shared.ts';

const NOTICES: Record<string, string> = {
  enrolled: 'Passkey added. You can sign in with it, and approvals that need a signature ask for it.',
  link_sent: 'A link to add a passkey is on its way to your e-mail. It works once, for 15 minutes.',
  removed: 'Passkey removed.',
};

/** "Sign in with a passkey" on the sign-in page; none where passkeys cannot work (PUBLIC_URL an IP). */
export function passkeySignInForm(ctx: ServiceContext): Html | null {
  if (!relyingParty(ctx)) return null;
  return html`<form
      method="post"
      action="/app/login/passkey"
      class="decide"
      data-passkey="sign-in"
      data-passkey-options="/app/login/passkey/options"
    >
      <input type="hidden" name="ceremony" value="" />
      <input type="hidden" name="response" value="" />
      <div class="buttons">
        <button type="submit" class="secondary">Sign in with a passkey</button>
        <span class="muted" data-passkey-status role="status"></span>
      </div>
    </form>
    ${SCRIPT}`;
}

/** A JSON field of a form (`response`): the parsed value, or null. */
function jsonField(body: Form | undefined, name: string): unknown {
  try {
    return JSON.parse(field(body, name));
  } catch {
    return null;
  }
}

/** The enrolment form; `link`: the token of the e-mailed link it came from, if any. */
function enrolForm(session: AppSession, link: string | null): Html {
  return html`<form
      method="post"
      action="/app/settings/passkeys"
      class="decide card"
      data-passkey="enrol"
      data-passkey-options="/app/settings/passkeys/options"
    >
      <h2>Add a passkey</h2>
      <input type="hidden" name="_csrf" value="${session.csrfToken}" />
      <input type="hidden" name="ceremony" value="" />
      <input type="hidden" name="response" value="" />
      <input type="hidden" name="confirmation" value="" />
      ${when(link, () => html`<input type="hidden" name="link" value="${link}" />`)}
      <label for="passkey-name">Name (which device is it?)</label>
      <input id="passkey-name" name="name" type="text" maxlength="100" placeholder="Laptop" />
      <div class="buttons">
        <button type="submit">Add a passkey</button>
        <span class="muted" data-passkey-status role="status"></span>
      </div>
    </form>
    ${SCRIPT}`;
}

export function passkeyPages(app: FastifyInstance, { ctx, limitAnonymous }: PageDeps) {
  async function page(session: AppSession, options: { notice?: string | null; problems?: string[] } = {}) {
    const passkeys = await listMemberPasskeys(ctx, session.member);
    const usable = relyingParty(ctx) !== null;
    const body = html`<div class="settings">
      <h1>Passkeys</h1>
      <p class="muted">
        A passkey is a key pair your device (or password manager) keeps; only its public half is stored here,
        and in the workspace's evidence. Sign in with it, and sign approvals with it: where a rule asks for
        it, your approval carries your device's signature over the exact action, which anyone can check.
      </p>
      ${when(
        (options.problems ?? []).length > 0,
        () => html`<div class="error" role="alert">${options.problems!.map((p) => html`<p>${p}</p>`)}</div>`,
      )}
      ${
        passkeys.length === 0
          ? html`<p>You have no passkey yet.</p>`
          : html`<table class="responsive">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Added</th>
                  <th>Last used</th>
                  <th><span class="muted">Actions</span></th>
                </tr>
              </thead>
              <tbody>
                ${passkeys.map(
                  (passkey) =>
                    html`<tr>
                      <td>${passkey.name}</td>
                      <td data-label="Added">${time(passkey.createdAt)}</td>
                      <td data-label="Last used">
                        ${passkey.lastUsedAt === null ? html`<span class="muted">never</span>` : time(passkey.lastUsedAt)}
                      </td>
                      <td>
                        <form method="post" action="/app/settings/passkeys/remove">
                          <input type="hidden" name="_csrf" value="${session.csrfToken}" />
                          <input type="hidden" name="id" value="${passkey.id}" />
                          <button type="submit" class="link">
                            Remove<span class="visually-hidden"> ${passkey.name}</span>
                          </button>
                        </form>
                      </td>
                    </tr>`,
                )}
              </tbody>
            </table>`
      }
      ${
        !usable
          ? html`<p class="muted">
              Passkeys need the service to be reached by a host name (PUBLIC_URL), not an IP address.
            </p>`
          : passkeys.length > 0
            ? html`${enrolForm(session, null)}
                <form method="post" action="/app/settings/passkeys/link" class="decide">
                  <input type="hidden" name="_csrf" value="${session.csrfToken}" />
                  <p class="muted">
                    Adding a passkey asks one you have to confirm it. Lost the device? Get a link by e-mail
                    instead.
                  </p>
                  <div class="buttons"><button type="submit" class="secondary">Send me a link</button></div>
                </form>`
            : html`<form method="post" action="/app/settings/passkeys/link" class="decide card">
                <h2>Add a passkey</h2>
                <input type="hidden" name="_csrf" value="${session.csrfToken}" />
                <p>
                  Your first passkey is added from a link sent to your own e-mail (${session.member.email}),
                  so that nobody else signed in as you can add one.
                </p>
                <div class="buttons"><button type="submit">Send me a link</button></div>
              </form>`
      }
    </div>`;
    return adminPage(ctx, session, { title: 'Passkeys', active: 'settings', notice: options.notice }, body);
  }

  /** A refusal the member can act on: the page again, saying why; nothing was changed. */
  async function refused(reply: FastifyReply, session: AppSession, error: unknown) {
    if (!(error instanceof ServiceError)) throw error;
    const message = error.issues[0] ? `Not added: the passkey ${error.issues[0].message}.` : error.message;
    return sendPage(reply, await page(session, { problems: [message] }), 422);
  }

  app.get<{ Querystring: { notice?: string } }>('/app/settings/passkeys', async (request, reply) => {
    const notice = NOTICES[request.query.notice ?? ''] ?? null;
    return sendPage(reply, await page(request.appSession!, { notice }));
  });

  app.post('/app/settings/passkeys/options', async (request, reply) => {
    try {
      return reply.header('Cache-Control', 'no-store').send(await enrolmentOptions(ctx, request.appSession!));
    } catch (error) {
      if (error instanceof ServiceError) return reply.code(409).send({ error: 'conflict' });
      throw error;
    }
  });

  app.post<{ Body: Form }>('/app/settings/passkeys', async (request, reply) => {
    const session = request.appSession!;
    try {
      await enrolPasskey(ctx, session, {
        ceremony: field(request.body, 'ceremony'),
        response: jsonField(request.body, 'response') as RegistrationResponseJSON,
        name: field(request.body, 'name'),
        confirmation: field(request.body, 'confirmation') || null,
        link: field(request.body, 'link') || undefined,
      });
    } catch (error) {
      return refused(reply, session, error);
    }
    return reply.redirect('/app/settings/passkeys?notice=enrolled', 303);
  });

  app.post<{ Body: Form }>('/app/settings/passkeys/remove', async (request, reply) => {
    const session = request.appSession!;
    if (!(await removePasskey(ctx, session, field(request.body, 'id'))))
      return problemPage(reply, 404, 'Not found', 'You have no such passkey.', session);
    return reply.redirect('/app/settings/passkeys?notice=removed', 303);
  });

  app.post('/app/settings/passkeys/link', async (request, reply) => {
    const session = request.appSession!;
    try {
      await sendEnrolmentLink(ctx, session);
    } catch (error) {
      if (!(error instanceof ServiceError)) throw error;
      return sendPage(reply, await page(session, { problems: [error.message] }), 409);
    }
    return reply.redirect('/app/settings/passkeys?notice=link_sent', 303);
  });

  // The e-mailed link: for the member it was sent to, signed in (else the sign-in page brings them back).
  app.get<{ Params: { token: string } }>('/app/settings/passkeys/enrol/:token', async (request, reply) => {
    const session = request.appSession!;
    if (!(await enrolmentLinkUsable(ctx, session.member, request.params.token)))
      return problemPage(
        reply,
        410,
        'Link used or expired',
        'This link has been used, has expired, or was sent to someone else. Ask for a new one on your Passkeys page.',
        session,
      );
    const body = html`<div class="settings">
      <h1>Add a passkey</h1>
      <p>For ${session.member.name} (${session.member.email}).</p>
      ${enrolForm(session, request.params.token)}
    </div>`;
    return sendPage(
      reply,
      await adminPage(ctx, session, { title: 'Add a passkey', active: 'settings' }, body),
    );
  });

  const publicRoute = { config: { public: true } };

  app.post('/app/login/passkey/options', publicRoute, async (request, reply) => {
    if (!(await limitAnonymous(request, reply))) return reply;
    try {
      return reply.header('Cache-Control', 'no-store').send(await signInOptions(ctx));
    } catch (error) {
      if (error instanceof ServiceError) return reply.code(409).send({ error: 'conflict' });
      throw error;
    }
  });

  app.post<{ Body: Form }>('/app/login/passkey', publicRoute, async (request, reply) => {
    if (!(await limitAnonymous(request, reply))) return reply;
    const session = await signInWithPasskey(ctx, {
      ceremony: field(request.body, 'ceremony'),
      response: jsonField(request.body, 'response') as AuthenticationResponseJSON,
    });
    if (!session)
      return problemPage(
        reply,
        401,
        'Not signed in',
        'That passkey could not sign you in here. Try again, or ask for a sign-in link by e-mail.',
      );
    return reply
      .header('Set-Cookie', sessionCookie(ctx, session.sessionId, SESSION_DAYS * 86_400))
      .redirect('/app/inbox', 303);
  });
}
