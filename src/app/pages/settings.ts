/**
 * Away and quiet hours (`/app/settings`): every member sets their own time zone, quiet hours,
 * out-of-office delegation, and where their approval requests go (phone, Slack and Teams user ids). A save changes only the signed-in member's item of the workspace file,
 * through the same path as the admin pages (`editConfig`: checked, versioned, evidenced as
 * `config.applied` with the delegations it changed, and a `delegation.changed` webhook), as them.
 */
import type { FastifyInstance } from 'fastify';
import type { AppSession } from '../../services/sign-in.ts';
import { type Html, html, time, when } from '../html.ts';
import { type Form, type PageDeps, problemPage, sendPage } from '../respond.ts';
import {
  adminPage,
  applyChange,
  configFields,
  currentConfig,
  describeIssue,
  inputField,
  issueSummary,
  readAtOf,
  type VersionedConfig,
} from './admin/shared.ts';
import {
  type AwayErrors,
  awayFields,
  awayIssue,
  type AwayValues,
  awayValuesOf,
  type MemberEntry,
  readAwayForm,
} from './away-form.ts';

const sameEmail = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/**
 * Where the member's approval requests go: once a member has acted, only they change these (issue 37),
 * here; an admin may only clear one. E-mail is the member's identity and is not changed here.
 */
const ADDRESSES = [
  ['phone', 'Phone for SMS (optional, E.164 like +15550100)'],
  ['slack_user_id', 'Slack user id (optional, like U01ABC)'],
  ['teams_user_id', 'Teams user id (optional, your Microsoft Entra object id)'],
] as const;
type AddressName = (typeof ADDRESSES)[number][0];
type AddressValues = Record<AddressName, string>;

const addressValuesOf = (m: MemberEntry): AddressValues => ({
  phone: m.phone ?? '',
  slack_user_id: m.slack_user_id ?? '',
  teams_user_id: m.teams_user_id ?? '',
});

/** The addresses a posted form sets; a form without them (from before they were on it) keeps them. */
function readAddresses(body: Form): { values: AddressValues; change: Partial<MemberEntry> } | null {
  if (!ADDRESSES.some(([name]) => typeof body[name] === 'string')) return null;
  const text = (name: AddressName) => (typeof body[name] === 'string' ? (body[name] as string).trim() : '');
  const values = {
    phone: text('phone').replace(/[\s()-]/g, ''),
    slack_user_id: text('slack_user_id'),
    teams_user_id: text('teams_user_id'),
  };
  const change: Partial<MemberEntry> = {};
  for (const [name] of ADDRESSES) change[name] = values[name] || undefined;
  return { values, change };
}

/** A delegation in words, from the stored entry: ended, planned or in force now. */
function delegationStatus(entry: MemberEntry, config: VersionedConfig, now: number): Html | null {
  const delegation = entry.delegate;
  if (!delegation) return null;
  const delegate = config.members?.find((m) => sameEmail(m.email, delegation.to))?.name ?? delegation.to;
  const from = Date.parse(delegation.from);
  const until = Date.parse(delegation.until);
  if (until <= now) return html`Your last delegation, to ${delegate}, ended ${time(until)}.`;
  return from > now
    ? html`You will be away from ${time(from)} until ${time(until)}: ${delegate} decides for you then.`
    : html`You are away until ${time(until)}: ${delegate} decides for you.`;
}

export function settingsPages(app: FastifyInstance, { ctx }: PageDeps) {
  async function page(
    session: AppSession,
    options: {
      values?: AwayValues;
      errors?: AwayErrors;
      addresses?: AddressValues;
      addressErrors?: Partial<AddressValues>;
      problems?: string[];
      notice?: string | null;
    } = {},
  ) {
    const config = await currentConfig(ctx, session);
    const me = config.members?.find((m) => sameEmail(m.email, session.member.email));
    if (!me) return null;
    const now = ctx.now();
    const status = delegationStatus(me, config, now);
    // Whose holds I decide now, as their delegate.
    const forOthers = (config.members ?? []).filter(
      (m) =>
        m.delegate &&
        sameEmail(m.delegate.to, me.email) &&
        Date.parse(m.delegate.from) <= now &&
        now < Date.parse(m.delegate.until),
    );
    const delegates =
      me.role === 'viewer'
        ? null
        : (config.members ?? [])
            .filter((m) => m.role !== 'viewer' && !sameEmail(m.email, me.email))
            .map((m) => ({ email: m.email, name: m.name }));
    const body = html`<div class="settings">
      <h1>Away and quiet hours</h1>
      <p class="muted">
        Your own settings. Each save is recorded in the workspace's history and evidence under your name, like
        any change to the workspace.
      </p>
      ${issueSummary(options.problems ?? [])}
      ${when(
        forOthers.length > 0,
        () =>
          html`<ul class="away-note">
            ${forOthers.map(
              (m) =>
                html`<li>
                  You decide for <strong>${m.name}</strong>, who is away until
                  ${time(Date.parse(m.delegate!.until))}.
                </li>`,
            )}
          </ul>`,
      )}
      <p><a href="/app/settings/passkeys">Passkeys</a>: sign in, and sign approvals, with your device.</p>
      <form method="post" action="/app/settings" class="decide card">
        ${configFields(session, config.version)}
        <fieldset class="plain">
          <legend><strong>Where your approval requests go</strong></legend>
          <p class="muted" style="margin:0">
            Besides your e-mail. Only you change these once you have used your account; admins can only clear
            them. Which of them you are notified by is set by your admins.
          </p>
          ${ADDRESSES.map(([name, label]) =>
            inputField({
              id: `me-${name}`,
              name,
              label,
              type: 'text',
              value: (options.addresses ?? addressValuesOf(me))[name],
              error: options.addressErrors?.[name],
              extra: name === 'phone' ? html`inputmode="tel" autocomplete="tel"` : html`autocomplete="off"`,
            }),
          )}
        </fieldset>
        ${when(status, () => html`<p class="away-note">${status}</p>`)}
        ${awayFields(options.values ?? awayValuesOf(me), options.errors ?? {}, {
          id: 'me',
          you: true,
          delegates,
        })}
        ${when(
          delegates === null,
          () => html`<p class="muted">Viewers do not decide, so nobody decides in their place.</p>`,
        )}
        <div class="buttons"><button type="submit">Save</button></div>
      </form>
    </div>`;
    return adminPage(
      ctx,
      session,
      { title: 'Away and quiet hours', active: 'settings', notice: options.notice },
      body,
    );
  }

  const gone = (reply: Parameters<typeof sendPage>[0], session: AppSession) =>
    problemPage(reply, 404, 'Not found', 'You are no longer a member of this workspace.', session);

  app.get<{ Querystring: { notice?: string } }>('/app/settings', async (request, reply) => {
    const session = request.appSession!;
    const notice = request.query.notice === 'saved' ? 'Saved.' : null;
    const shown = await page(session, { notice });
    return shown ? sendPage(reply, shown) : gone(reply, session);
  });

  app.post<{ Body: Form }>('/app/settings', async (request, reply) => {
    const session = request.appSession!;
    const saved = (await currentConfig(ctx, session)).members?.find((m) =>
      sameEmail(m.email, session.member.email),
    );
    const { values, change, errors } = readAwayForm(request.body, ctx.now(), saved?.delegate);
    const addresses = readAddresses(request.body);
    const addressErrors: Partial<AddressValues> = {};
    // Viewers have no delegation to set.
    if (session.member.role === 'viewer') {
      delete change.delegate;
      delete errors.delegate;
    }
    const fail = async (problems: string[]) => {
      const shown = await page(session, {
        values,
        errors,
        addresses: addresses?.values,
        addressErrors,
        problems,
      });
      return shown ? sendPage(reply, shown, 422) : gone(reply, session);
    };
    if (Object.keys(errors).length > 0) return fail([]);
    // Only the signed-in member's own item changes, whatever else the form carries.
    let index = -1;
    let described: MemberEntry[] = [];
    const issues = await applyChange(ctx, session, readAtOf(request.body), (now) => {
      described = (now.members ?? []).map((m) =>
        sameEmail(m.email, session.member.email) ? { ...m, ...change, ...addresses?.change } : m,
      );
      index = described.findIndex((m) => sameEmail(m.email, session.member.email));
      return { members: described };
    });
    if (issues) {
      const problems: string[] = [];
      for (const issue of issues) {
        const [part, at, ...path] = issue.field.split('.');
        const mine = part === 'members' && Number(at) === index;
        const own = mine ? awayIssue(path, issue.message) : null;
        const address = mine ? ADDRESSES.find(([name]) => name === path[0])?.[0] : undefined;
        if (own) errors[own[0]] ??= own[1];
        else if (address) addressErrors[address] ??= issue.message;
        else problems.push(describeIssue(issue, { members: described }));
      }
      return fail(problems);
    }
    return reply.redirect('/app/settings?notice=saved', 303);
  });
}
