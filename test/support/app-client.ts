/**
 * Fetch-level sessions and forms for the web app (sign in with an invite link, then GET and POST as that
 * member), and the evidence checks the app tests make after a change.
 */
import assert from 'node:assert/strict';
import { inviteLink } from '../../src/services/sign-in.ts';
import type { Workspace } from '../../src/store/workspaces.ts';
import { call } from './http.ts';
import type { TestService } from './service.ts';

/** A signed-in member: the `approvals_session` cookie value and the session's CSRF token. */
export interface Session {
  cookie: string;
  csrf: string;
}

/** An answer from the app, redirects not followed. */
export interface Page {
  status: number;
  location: string | null;
  /** The flash notice this answer left for the next page (`saved`, `redelivered:3`), or null. */
  notice: string | null;
  text: string;
}

/** Form fields; a list value is sent as repeated fields. */
export type Fields = Record<string, string | string[]>;

export interface AppClient {
  /** A GET; `notice` is sent as the flash cookie a redirect left. */
  get(session: Session | null, path: string, notice?: string | null): Promise<Page>;
  /** Follows a redirect as a browser does: its location, with the notice it left. */
  follow(session: Session | null, page: Page): Promise<Page>;
  /** A form POST with `_csrf` (the session's token unless given; `null` sends none) and extra headers. */
  post(
    session: Session | null,
    path: string,
    fields: Fields | [string, string][],
    csrf?: string | null,
    headers?: Record<string, string>,
  ): Promise<Page>;
  /** Signs in through a one-time invite link and reads the CSRF token from the inbox. */
  signIn(workspace: Workspace, email: string): Promise<Session>;
}

/**
 * A client for one service. Pass a getter when the service is started later (in `before`);
 * `onPage` sees every page the client receives.
 */
export function appClient(
  service: TestService | (() => TestService),
  options: { onPage?: (page: Page) => void } = {},
): AppClient {
  const t = typeof service === 'function' ? service : () => service;
  const cookieOf = (session: Session | null, notice?: string | null): Record<string, string> => {
    const cookies = [
      ...(session ? [`approvals_session=${session.cookie}`] : []),
      ...(notice ? [`approvals_flash=${notice}`] : []),
    ];
    return cookies.length > 0 ? { cookie: cookies.join('; ') } : {};
  };

  async function read(response: Response): Promise<Page> {
    const page = {
      status: response.status,
      location: response.headers.get('location'),
      notice:
        response.headers
          .getSetCookie()
          .map((cookie) => cookie.match(/^approvals_flash=([^;]+)/)?.[1])
          .find((value) => value !== undefined) ?? null,
      text: await response.text(),
    };
    options.onPage?.(page);
    return page;
  }

  async function get(session: Session | null, path: string, notice?: string | null): Promise<Page> {
    return read(await fetch(t().url + path, { headers: cookieOf(session, notice), redirect: 'manual' }));
  }

  function follow(session: Session | null, page: Page): Promise<Page> {
    assert.ok(page.location, `a redirect (${page.status})`);
    return get(session, page.location, page.notice);
  }

  async function post(
    session: Session | null,
    path: string,
    fields: Fields | [string, string][],
    csrf: string | null = session?.csrf ?? null,
    headers: Record<string, string> = {},
  ): Promise<Page> {
    const body = new URLSearchParams();
    if (csrf !== null) body.append('_csrf', csrf);
    const entries = Array.isArray(fields) ? fields : Object.entries(fields);
    for (const [name, value] of entries) for (const v of [value].flat()) body.append(name, v);
    const response = await fetch(t().url + path, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...cookieOf(session),
        ...headers,
      },
      body: body.toString(),
      redirect: 'manual',
    });
    return read(response);
  }

  async function signIn(workspace: Workspace, email: string): Promise<Session> {
    const { url } = await inviteLink(t().service.ctx, workspace, email);
    const response = await fetch(t().url + new URL(url).pathname, { method: 'POST', redirect: 'manual' });
    assert.equal(response.status, 303);
    const cookie = response.headers.get('set-cookie')?.match(/approvals_session=([^;]+)/)?.[1];
    assert.ok(cookie, 'a session cookie');
    const inbox = await get({ cookie, csrf: '' }, '/app/inbox');
    const csrf = inbox.text.match(/name="_csrf" value="([^"]+)"/)?.[1];
    assert.ok(csrf, 'a CSRF token in the page');
    return { cookie, csrf };
  }

  return { get, follow, post, signIn };
}

/** How many evidence entries the workspace of `key` has, once the chain is checked to verify. */
export async function verifiedEvidence(t: TestService, key: string): Promise<number> {
  const answer = await call(t.url, 'GET', '/api/v1/audit/verify', { key });
  assert.equal(answer.status, 200);
  assert.equal(answer.body.valid, true);
  return answer.body.checked as number;
}

/** The newest evidence entry of a workspace: its type, its data, and the data as stored. */
export async function lastEvidence(t: TestService, workspace: Workspace) {
  const row = await t.service.ctx.db.one<{ type: string; data: string }>(
    'SELECT type, data FROM evidence WHERE workspace_id = $1 ORDER BY seq DESC LIMIT 1',
    [workspace.id],
  );
  return { type: row!.type, data: JSON.parse(row!.data), text: row!.data };
}

/** Text as the page's HTML escaped it (the escaping of src/markup), back as written. */
export const unescapeHtml = (text: string) =>
  text
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&');

const attributes = (tag: string) =>
  Object.fromEntries(
    [...tag.matchAll(/([\w-]+)(?:="([^"]*)")?/g)].slice(1).map((m) => [m[1]!, unescapeHtml(m[2] ?? '')]),
  );

/** What a browser would send for the form posting to `action`: its inputs, choices and text as shown. */
export function formFields(page: string, action: string): [string, string][] {
  const start = page.indexOf(`action="${action}"`);
  assert.ok(start >= 0, `a form posting to ${action}`);
  const form = page.slice(start, page.indexOf('</form>', start));
  const sent: [string, string][] = [];
  for (const [tag] of form.matchAll(/<input\b[^>]*>/g)) {
    const a = attributes(tag);
    if (!a.name || (['checkbox', 'radio'].includes(a.type!) && !('checked' in a))) continue;
    sent.push([a.name, a.value ?? '']);
  }
  for (const [, open, options] of form.matchAll(/<select\b([^>]*)>([\s\S]*?)<\/select>/g)) {
    const all = [...options!.matchAll(/<option\b([^>]*)>([^<]*)<\/option>/g)];
    const valueOf = (o: RegExpExecArray) => attributes(`<option ${o[1]}`).value ?? unescapeHtml(o[2]!.trim());
    const select = attributes(`<select ${open}`);
    const chosen = all.filter((o) => 'selected' in attributes(`<option ${o[1]}`));
    // A multiple choice sends each option chosen; a single one its choice, or else its first option.
    if ('multiple' in select) for (const o of chosen) sent.push([select.name!, valueOf(o)]);
    else sent.push([select.name!, valueOf(chosen[0] ?? all[0]!)]);
  }
  for (const [, open, text] of form.matchAll(/<textarea\b([^>]*)>([\s\S]*?)<\/textarea>/g))
    sent.push([attributes(`<textarea ${open}`).name!, unescapeHtml(text!.replace(/^\n/, ''))]);
  return sent.filter(([name]) => name !== '_csrf');
}
