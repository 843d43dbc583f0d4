/**
 * Webhook: the workspace's one endpoint (set, change and remove it through `applyConfig`, like
 * `approvals apply`), its signing secret (made and rotated here, shown once on the page that made it,
 * never again), and the delivery log with its dead letters, which can be sent again.
 */
import { STATUS_CODES } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { WorkspaceConfig } from '../../../services/config-file.ts';
import { type FieldIssue, ServiceError } from '../../../services/errors.ts';
import { currentConfigVersion } from '../../../services/apply-config.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import {
  deliveryLog,
  redeliver,
  rotateWebhookSecret,
  ROTATION_OVERLAP_MS,
  sendTestEvent,
  webhookEndpointOf,
  webhookEventOf,
  deadDeliveries,
} from '../../../services/webhooks.ts';
import type { WebhookEndpoint } from '../../../store/webhooks.ts';
import { copyable } from '../../copyable.ts';
import { type Html, html, time, when } from '../../html.ts';
import { field, type Form, type PageDeps, problemPage, sendPage } from '../../respond.ts';
import {
  ADMIN,
  adminPage,
  applyChange,
  confirmCard,
  configFields,
  csrfField,
  describedBy,
  fieldError,
  issueSummary,
  selected,
  readAtOf,
  versionPassedOn,
} from './shared.ts';

const PAGE = '/app/admin/webhook';
const STATES = ['pending', 'delivered', 'dead'] as const;
const EVENT_ID = /^msg_[A-Za-z0-9_-]{1,60}$/;
const SHOWN = 100;
/** How many dead letters are counted for the "Redeliver all dead" button. */
const DEAD_COUNTED = 1000;

const NOTICES: Record<string, string> = {
  updated: 'Endpoint saved. Events go to the new URL, signed with the same secret.',
  enabled: 'Endpoint enabled again. Events that were waiting are sent now.',
  removed: 'Endpoint removed. No events are made or sent until you set one again.',
  tested: 'Test event queued: it shows in the delivery log below as webhook.test.',
};

type LogEntry = Awaited<ReturnType<typeof deliveryLog>>[number];
type Attempt = LogEntry['attempts'][number];

const ms = (iso: string | null) => (iso === null ? null : Date.parse(iso));

/** A time to the second (attempts come seconds apart); app.js shows it in the reader's zone. */
const exactTime = (iso: string) =>
  html`<time datetime="${iso}">${iso.replace('T', ' ').slice(0, 19)} UTC</time>`;

const duration = (value: number) => (value < 1000 ? `${value} ms` : `${(value / 1000).toFixed(1)} s`);

/** An attempt's outcome: the receiver's status code, or why there was no answer. */
function outcome(attempt: Attempt): Html {
  if (attempt.status_code === null) return html`<span class="bad">${attempt.error ?? 'no answer'}</span>`;
  const code = attempt.status_code;
  const phrase = STATUS_CODES[code] ? ` ${STATUS_CODES[code]}` : '';
  return html`<span class="${code >= 200 && code < 300 ? 'ok' : 'bad'}">HTTP ${code}${phrase}</span>`;
}

const STATE_CLASS: Record<string, string> = { delivered: 'approved', pending: 'pending', dead: 'rejected' };
const stateBadge = (state: string) => html`<span class="status ${STATE_CLASS[state] ?? ''}">${state}</span>`;

function endpointCard(
  session: AppSession,
  version: number,
  endpoint: WebhookEndpoint | undefined,
  now: number,
  values: { url: string },
  errors: Record<string, string>,
): Html {
  const state = !endpoint
    ? html`<span class="status">none</span> <span class="muted">No events are made.</span>`
    : endpoint.disabledAt === null
      ? html`<span class="status approved">active</span>`
      : html`<span class="status rejected">disabled</span> since ${time(endpoint.disabledAt)}
          <p class="muted" style="margin:0.25rem 0 0">
            The receiver answered <code>410 Gone</code>, so nothing is sent. New events wait in the queue;
            save the URL (the same or a new one) to enable the endpoint again.
          </p>`;
  return html`<section class="card wh" aria-labelledby="endpoint-title">
    <div class="heading">
      <h2 id="endpoint-title">Endpoint</h2>
      ${when(
        endpoint,
        () =>
          html`<div class="row actions">
            ${when(
              endpoint!.disabledAt !== null,
              () =>
                html`<form method="post" action="${PAGE}/save">
                  ${configFields(session, version)}
                  <input type="hidden" name="url" value="${endpoint!.url}" />
                  <button type="submit">Enable again</button>
                </form>`,
            )}
            <form method="post" action="${PAGE}/test">
              ${configFields(session, version)}
              <button type="submit" class="secondary">Send test event</button>
            </form>
            <form method="post" action="${PAGE}/rotate">
              ${configFields(session, version)}
              <button type="submit" class="secondary">Rotate secret…</button>
            </form>
            <form method="post" action="${PAGE}/remove">
              ${configFields(session, version)}
              <button type="submit" class="link">Remove endpoint…</button>
            </form>
          </div>`,
      )}
    </div>
    <dl class="facts">
      <dt>State</dt>
      <dd id="endpoint-state">${state}</dd>
      ${when(
        endpoint,
        () =>
          html`<dt>URL</dt>
            <dd><code class="url">${endpoint!.url}</code></dd>
            <dt>Set up</dt>
            <dd>${time(endpoint!.createdAt)}</dd>
            <dt>Secret</dt>
            <dd>
              <code>whsec_…</code>
              <span class="muted">(stored encrypted; shown only on the page that made it)</span>
              ${when(
                endpoint!.previousSecretSealed !== null && (endpoint!.previousUntil ?? 0) > now,
                () =>
                  html`<br />The previous secret also signs every event until
                    ${time(endpoint!.previousUntil)}.`,
              )}
            </dd>`,
      )}
    </dl>
    <form method="post" action="${PAGE}/save" class="decide">
      ${configFields(session, version)}
      <label for="w-url"
        >${endpoint ? 'Change the URL' : 'Endpoint URL'}
        <span class="muted"
          >(http or https; your receiver of <code>hold.approved</code>, <code>hold.rejected</code> and
          <code>hold.expired</code>)</span
        ></label
      >
      <input
        id="w-url"
        name="url"
        type="url"
        required
        maxlength="2000"
        placeholder="https://example.com/hooks/approvals"
        autocomplete="off"
        spellcheck="false"
        value="${values.url}"
        ${describedBy('w-url', errors.url)}
      />
      ${fieldError('w-url', errors.url)}
      <div class="buttons">
        <button type="submit">${endpoint ? 'Save URL' : 'Set endpoint'}</button>
      </div>
    </form>
  </section>`;
}

function attemptList(entry: LogEntry): Html {
  return html`<table class="attempts">
    <thead>
      <tr>
        <th>#</th>
        <th>Time</th>
        <th>Duration</th>
        <th>Result</th>
      </tr>
    </thead>
    <tbody>
      ${entry.attempts.map(
        (attempt) =>
          html`<tr>
            <td>${attempt.attempt}</td>
            <td>${exactTime(attempt.at!)}</td>
            <td>${duration(attempt.duration_ms)}</td>
            <td>${outcome(attempt)}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function logRow(session: AppSession, entry: LogEntry, disabled: boolean): Html {
  const last = entry.attempts.at(-1);
  const count = entry.attempts.length;
  const waiting =
    entry.state !== 'pending'
      ? null
      : disabled
        ? html` · <span class="muted">waiting: no enabled endpoint</span>`
        : entry.next_attempt_at
          ? html` · next attempt ${exactTime(entry.next_attempt_at)}`
          : null;
  return html`<tr class="event">
      <td><code>${entry.event}</code></td>
      <td data-label="Hold">
        ${
          entry.event === 'evidence.checkpoint'
            ? html`<a href="/app/evidence"><code>${entry.hold}</code></a>`
            : entry.event === 'webhook.test'
              ? html`<code>${entry.hold}</code>`
              : html`<a href="/app/holds/${entry.hold}"><code>${entry.hold}</code></a>`
        }
      </td>
      <td data-label="State">${stateBadge(entry.state)}</td>
      <td data-label="Created">${time(ms(entry.created_at))}</td>
      <td data-label="Delivered">
        ${
          entry.state === 'dead'
            ? html`<form method="post" action="${PAGE}/redeliver">
                ${csrfField(session)}
                <input type="hidden" name="id" value="${entry.id}" />
                <button type="submit" class="secondary">
                  Redeliver<span class="visually-hidden"> ${entry.event} for ${entry.hold}</span>
                </button>
              </form>`
            : time(ms(entry.delivered_at))
        }
      </td>
    </tr>
    <tr class="tries">
      <td colspan="5">
        ${
          count === 0
            ? html`<span class="muted">No attempt yet</span>${waiting}`
            : html`<details>
                <summary>
                  <span class="attempt-count">${count} ${count === 1 ? 'attempt' : 'attempts'}</span> · last:
                  ${outcome(last!)}${waiting}
                </summary>
                <p class="muted">Delivery <code>${entry.id}</code> (<code>X-Service-Delivery</code>)</p>
                ${attemptList(entry)}
              </details>`
        }
      </td>
    </tr>`;
}

function logSection(
  session: AppSession,
  entries: LogEntry[],
  filter: string | undefined,
  dead: number,
  disabled: boolean,
): Html {
  return html`<section class="card wh" aria-labelledby="log-title">
    <div class="heading">
      <h2 id="log-title">Delivery log</h2>
      ${when(
        dead > 0,
        () =>
          html`<form method="post" action="${PAGE}/redeliver">
            ${csrfField(session)}
            <input type="hidden" name="all" value="dead" />
            <button type="submit">
              Redeliver all dead (${dead >= DEAD_COUNTED ? `${DEAD_COUNTED}+` : dead})
            </button>
          </form>`,
      )}
    </div>
    <p class="muted">
      Newest first. Each event is tried up to 25 times over about 2.3 days (only a 2xx answer counts); then it
      is <em>dead</em> and waits here to be redelivered.
    </p>
    <form method="get" action="${PAGE}" class="filters" role="search">
      <div>
        <label for="f-state">State</label
        ><select id="f-state" name="state">
          <option value="">Any</option>
          ${STATES.map((s) => html`<option value="${s}" ${selected(filter === s)}>${s}</option>`)}
        </select>
      </div>
      <div><button type="submit" class="secondary">Filter</button></div>
    </form>
    ${
      entries.length === 0
        ? html`<p class="empty">${filter ? `No ${filter} events.` : 'No events yet.'}</p>`
        : html`<table class="responsive log">
              <thead>
                <tr>
                  <th>Event</th>
                  <th>Hold</th>
                  <th>State</th>
                  <th>Created</th>
                  <th>Delivered</th>
                </tr>
              </thead>
              <tbody>
                ${entries.map((entry) => logRow(session, entry, disabled))}
              </tbody>
            </table>
            ${when(entries.length >= SHOWN, () => html`<p class="muted">The newest ${SHOWN} are shown.</p>`)}`
    }
  </section>`;
}

/** A secret, shown this once: the answer to the POST that made it, never stored to be shown again. */
function secretBox(title: string, secret: string, extra: Html | null): Html {
  return html`<section class="card" aria-labelledby="secret-made">
    <h2 id="secret-made">${title}</h2>
    <p>
      <strong>Copy this secret now. It will not be shown again</strong>: it is stored encrypted, and no page
      shows it.
    </p>
    ${copyable('new-secret-value', secret, 'the secret')} ${extra}
    <p class="muted">
      Your receiver checks <code>X-Service-Signature</code>: the hex HMAC-SHA256 of the raw body, keyed with
      this secret exactly as shown (<code>whsec_</code> included). Standard Webhooks verifiers work too, with
      the <code>webhook-signature</code> header.
    </p>
  </section>`;
}

export function webhookPages(app: FastifyInstance, { ctx }: PageDeps) {
  const mainPage = async (
    session: AppSession,
    options: {
      notice?: string | null;
      before?: Html | null;
      problems?: string[];
      filter?: string;
      values?: { url: string };
      errors?: Record<string, string>;
    } = {},
  ) => {
    // Read before the endpoint, as `currentConfig` does.
    const version = await currentConfigVersion(ctx, session.workspace);
    const endpoint = await webhookEndpointOf(ctx, session.workspace.id);
    const entries = await deliveryLog(ctx, session.workspace.id, { state: options.filter, limit: SHOWN });
    const dead = await deadDeliveries(ctx, session.workspace.id, DEAD_COUNTED);
    const body = html`<h1>Webhook</h1>
      ${options.before ?? null} ${issueSummary(options.problems ?? [])}
      <p class="muted">
        When a hold is approved, rejected or expires, the service sends an event (JSON, signed) to your
        endpoint, at least once: use the hold reference in <code>id</code> to ignore repeats.
      </p>
      ${endpointCard(
        session,
        version,
        endpoint,
        ctx.now(),
        options.values ?? { url: endpoint?.url ?? '' },
        options.errors ?? {},
      )}
      ${logSection(session, entries, options.filter, dead, !endpoint || endpoint.disabledAt !== null)}`;
    return adminPage(ctx, session, { title: 'Webhook', active: 'webhook', notice: options.notice }, body);
  };

  /** The `webhook` part of the workspace file, through `applyChange`, keeping the new secret if one was made. */
  const applyWebhook = async (
    session: AppSession,
    readAt: number | undefined,
    webhook: WorkspaceConfig['webhook'],
  ): Promise<{ issues: FieldIssue[] } | { secret?: string }> => {
    let secret: string | undefined;
    const issues = await applyChange(
      ctx,
      session,
      readAt,
      () => ({ webhook }),
      (applied) => {
        secret = applied.webhook_secret;
      },
    );
    return issues ? { issues } : { secret };
  };

  const notFoundPage = (reply: Parameters<typeof problemPage>[0], session: AppSession) =>
    problemPage(reply, 404, 'Not found', 'This workspace has no webhook endpoint.', session);

  app.get<{ Querystring: { notice?: string; state?: string; count?: string } }>(
    PAGE,
    ADMIN,
    async (request, reply) => {
      const { query } = request;
      const filter = (STATES as readonly string[]).includes(query.state ?? '') ? query.state : undefined;
      let notice = NOTICES[query.notice ?? ''] ?? null;
      if (query.notice === 'redelivered') {
        const count = /^\d{1,7}$/.test(query.count ?? '') ? Number(query.count) : 0;
        notice =
          count === 0
            ? 'Nothing to redeliver: no dead events.'
            : `${count} ${count === 1 ? 'event is' : 'events are'} queued again for a fresh round of attempts.`;
      }
      return sendPage(reply, await mainPage(request.appSession!, { notice, filter }));
    },
  );

  app.post<{ Body: Form }>(`${PAGE}/save`, ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const url = field(request.body, 'url');
    const refused = async (errors: Record<string, string>, problems: string[] = []) =>
      sendPage(
        reply,
        await mainPage(session, {
          values: { url },
          errors,
          problems: [...Object.values(errors).map((message) => `URL: ${message}`), ...problems],
        }),
        422,
      );
    if (!url) return refused({ url: 'Enter the URL of your receiver.' });
    const before = await webhookEndpointOf(ctx, session.workspace.id);
    const result = await applyWebhook(session, readAtOf(request.body), { url });
    if ('issues' in result) {
      const errors: Record<string, string> = {};
      const problems: string[] = [];
      for (const issue of result.issues) {
        if (issue.field.startsWith('webhook')) errors.url ??= issue.message;
        else
          problems.push(
            `${issue.field === '(change)' || issue.field === '(file)' ? '' : `${issue.field}: `}${issue.message}`,
          );
      }
      return refused(errors, problems);
    }
    if (result.secret) {
      // The answer to the POST itself shows the secret: no redirect, nothing kept to show it again.
      const shown = secretBox('Endpoint set: its signing secret', result.secret, null);
      return sendPage(reply, await mainPage(session, { before: shown }));
    }
    return reply.redirect(`${PAGE}?notice=${before?.disabledAt != null ? 'enabled' : 'updated'}`, 303);
  });

  app.post<{ Body: Form }>(`${PAGE}/rotate`, ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const endpoint = await webhookEndpointOf(ctx, session.workspace.id);
    if (!endpoint) return notFoundPage(reply, session);
    if (field(request.body, 'confirm') !== 'yes') {
      const body = confirmCard(session, {
        title: 'Rotate the signing secret?',
        message: html`A new secret is made and shown once. The current one keeps signing beside it for 24
        hours (until about ${time(ctx.now() + ROTATION_OVERLAP_MS)}), then stops: update your receiver within
        that time.`,
        action: `${PAGE}/rotate`,
        fields: {},
        button: 'Rotate secret',
        back: PAGE,
      });
      return sendPage(
        reply,
        await adminPage(ctx, session, { title: 'Rotate webhook secret', active: 'webhook' }, body),
      );
    }
    let secret: string;
    try {
      ({ secret } = await rotateWebhookSecret(ctx, session.workspace.id));
    } catch (error) {
      if (error instanceof ServiceError && error.code === 'not_found') return notFoundPage(reply, session);
      throw error;
    }
    const rotated = await webhookEndpointOf(ctx, session.workspace.id);
    const until = rotated?.previousUntil ?? ctx.now() + ROTATION_OVERLAP_MS;
    const shown = secretBox(
      'New signing secret',
      secret,
      html`<p>
        The old secret keeps signing too for 24 hours, until ${time(until)}: every event carries both
        signatures until then, so switch your receiver over before that time.
      </p>`,
    );
    return sendPage(reply, await mainPage(session, { before: shown }));
  });

  app.post<{ Body: Form }>(`${PAGE}/remove`, ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const endpoint = await webhookEndpointOf(ctx, session.workspace.id);
    if (!endpoint) return notFoundPage(reply, session);
    if (field(request.body, 'confirm') !== 'yes') {
      const body = confirmCard(session, {
        title: 'Remove the webhook endpoint?',
        message: html`<code>${endpoint.url}</code>. No events are made or sent from now on, and its secret is
          deleted: an endpoint set later gets a new one. The delivery log stays.`,
        action: `${PAGE}/remove`,
        fields: { ...versionPassedOn(request.body) },
        button: 'Remove endpoint',
        back: PAGE,
      });
      return sendPage(
        reply,
        await adminPage(ctx, session, { title: 'Remove webhook endpoint', active: 'webhook' }, body),
      );
    }
    const result = await applyWebhook(session, readAtOf(request.body), null);
    if ('issues' in result) {
      const problems = result.issues.map((issue) => issue.message);
      return sendPage(reply, await mainPage(session, { problems }), 422);
    }
    return reply.redirect(`${PAGE}?notice=removed`, 303);
  });

  app.post<{ Body: Form }>(`${PAGE}/test`, ADMIN, async (request, reply) => {
    const session = request.appSession!;
    try {
      await sendTestEvent(ctx, session.workspace.id);
    } catch (error) {
      if (!(error instanceof ServiceError)) throw error;
      return sendPage(reply, await mainPage(session, { problems: ['Set an endpoint first.'] }), 409);
    }
    return reply.redirect(`${PAGE}?notice=tested`, 303);
  });

  app.post<{ Body: Form }>(`${PAGE}/redeliver`, ADMIN, async (request, reply) => {
    const session = request.appSession!;
    let ids: string[] | 'all-dead';
    if (field(request.body, 'all') === 'dead') ids = 'all-dead';
    else {
      const id = field(request.body, 'id');
      const event = EVENT_ID.test(id) ? await webhookEventOf(ctx, session.workspace.id, id) : null;
      if (!event)
        return problemPage(reply, 404, 'Not found', 'No such webhook event in this workspace.', session);
      ids = [id];
    }
    const { requeued } = await redeliver(ctx, session.workspace.id, ids);
    return reply.redirect(`${PAGE}?notice=redelivered&count=${requeued}`, 303);
  });
}
