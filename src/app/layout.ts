/** The page shell of the app: header with workspace branding, navigation, live pending count. */
import type { AppSession } from '../services/sign-in.ts';
import { type Html, html, when } from './html.ts';
import { FREEZE_PAGE, frozenBanner } from './views/freeze.ts';

export const APP_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' https: data:; " +
  "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

export interface PageOptions {
  title: string;
  session?: AppSession | null;
  /** Pending holds waiting for this member, shown in the header; when not given, app.js asks. */
  pending?: number;
  active?: string;
  notice?: string | null;
  /** Whether app.js refreshes the page when holds change (not for pages with forms being filled in). */
  live?: boolean;
  /** The workspace's name, logo and colour on a page without a session (a decision link). */
  brand?: Pick<AppSession['workspace'], 'name' | 'logoUrl' | 'accentColor'> | null;
  /** The reader's saved time zone on a page without a session (a decision link's member). */
  timeZone?: string | null;
}

const NAV: [string, string, (session: AppSession) => boolean][] = [
  ['inbox', 'Inbox', () => true],
  ['history', 'History', () => true],
  ['evidence', 'Evidence', () => true],
  ['reports', 'Reports', () => true],
  ['widget', 'Widget', (s) => s.member.role !== 'viewer'],
  ['settings', 'Settings', () => true],
  ['rules', 'Rules', (s) => s.member.role === 'admin'],
  ['members', 'Members', (s) => s.member.role === 'admin'],
  ['keys', 'API keys', (s) => s.member.role === 'admin'],
  ['mcp', 'MCP servers', (s) => s.member.role === 'admin'],
  ['webhook', 'Webhook', (s) => s.member.role === 'admin'],
  ['slack', 'Slack', (s) => s.member.role === 'admin'],
  ['teams', 'Teams', (s) => s.member.role === 'admin'],
  ['branding', 'Branding', (s) => s.member.role === 'admin'],
  ['sign-in', 'Sign-in', (s) => s.member.role === 'admin'],
  ['freeze', 'Freeze', (s) => s.member.role === 'admin'],
];

const HREF: Record<string, string> = {
  inbox: '/app/inbox',
  history: '/app/history',
  evidence: '/app/evidence',
  reports: '/app/reports',
  widget: '/app/widget',
  settings: '/app/settings',
  rules: '/app/admin/rules',
  members: '/app/admin/members',
  keys: '/app/admin/keys',
  mcp: '/app/admin/mcp-servers',
  webhook: '/app/admin/webhook',
  slack: '/app/admin/slack',
  teams: '/app/admin/teams',
  branding: '/app/admin/branding',
  'sign-in': '/app/admin/sign-in',
  freeze: FREEZE_PAGE,
};

/** The main navigation, with the count of holds waiting for the reader beside Inbox. */
const navigation = (session: AppSession, options: PageOptions) =>
  html`<nav aria-label="Main">
    <ul>
      ${NAV.filter(([, , visible]) => visible(session)).map(
        ([key, label]) =>
          html`<li>
            <a href="${HREF[key]}" ${options.active === key ? html` aria-current="page"` : null}
              >${label}${
                key === 'inbox'
                  ? html` <span
                      class="badge"
                      id="pending-count"
                      aria-label="waiting for you"
                      ${options.pending === undefined ? html`hidden` : null}
                      >${options.pending ?? ''}</span
                    >`
                  : null
              }</a
            >
          </li>`,
      )}
    </ul>
  </nav>`;

export function layout(options: PageOptions, body: Html): Html {
  const { session } = options;
  const brand = session?.workspace ?? options.brand;
  const accent = brand?.accentColor ?? '#0a6e5c';
  // Every time on the page is shown in the reader's saved zone, else the browser's (static/time.js).
  const zone = session?.member.timeZone ?? options.timeZone;
  const brandMark = (b: NonNullable<typeof brand>) =>
    html`<div class="brand">
      ${when(b.logoUrl, () => html`<img src="${b.logoUrl}" alt="" />`)}
      <span>${b.name}</span>
    </div>`;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${options.title} · Approvals</title>
        <link rel="stylesheet" href="/app/static/app.css" />
        <script src="/app/static/app.js" defer></script>
        <script src="/app/static/time.js" defer></script>
        <script src="/app/static/copy.js" defer></script>
      </head>
      <body style="--accent:${accent}" ${when(zone, () => html`data-time-zone="${zone}"`)}>
        <a class="skip" href="#main">Skip to content</a>
        ${when(
          session,
          () =>
            html`<header class="top">
              ${brandMark(session!.workspace)}
              <details class="menu">
                <summary>Menu</summary>
                ${navigation(session!, options)}
                <form method="post" action="/app/logout" class="signout">
                  <input type="hidden" name="_csrf" value="${session!.csrfToken}" />
                  <span class="who">${session!.member.name} · ${session!.member.role}</span>
                  <button type="submit" class="link">Sign out</button>
                </form>
              </details>
            </header>`,
        )}
        ${when(!session && brand, () => html`<header class="top">${brandMark(brand!)}</header>`)}
        <main id="main" tabindex="-1" data-live="${session && options.live !== false ? 'on' : 'off'}">
          ${session ? frozenBanner(session.workspace) : null}
          ${when(options.notice, () => html`<p class="notice" role="status">${options.notice}</p>`)} ${body}
        </main>
      </body>
    </html>`;
}
