/**
 * Hostile values are inert wherever they are shown. Agents choose tool names (MCP: only their length
 * is checked), arguments, context and their identity; admins choose the workspace's name, logo URL and
 * member names. Here they all carry payloads:
 * - in headless Chromium (SQLite is enough): the inbox, a hold's page, history, evidence, reports,
 *   branding, the public status page and the widget run no script, grow no element from a payload,
 *   and show the payload as text where the value is shown;
 * - in the reports, on each storage backend: the CSV keeps every value as text with spreadsheet
 *   formulas neutralized, and the PDF holds no action (JavaScript, Launch, URI, OpenAction, AA) while
 *   showing the payloads as plain text (pdftotext), and a control character in a name neither garbles
 *   nor forges the text shown (pdfkit writes it as one hex digit, shifting every glyph after it).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import PDFDocument from 'pdfkit';
import type { Browser, Locator, Page } from 'playwright-core';
import { SUMMARY_LENGTH } from '../src/channels/messages.ts';
import { summarizeAction } from '../src/domain/summary.ts';
import { mintEmbedToken } from '../src/services/channel-decisions.ts';
import { mintDecisionLink } from '../src/services/decision-links.ts';
import { inviteLink } from '../src/services/sign-in.ts';
import { findHold } from '../src/store/holds.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import { findWorkspace, type Workspace } from '../src/store/workspaces.ts';
import { backends, sqlite } from './support/backends.ts';
import {
  assertArgumentsShown,
  browserSkip,
  closeBrowser,
  launchBrowser,
  openPage,
  type TestPage,
} from './support/browser.ts';
import { call, submission, rpcMessages } from './support/http.ts';
import { type RecordingUpstream, startRecordingUpstream } from './support/mcp-upstream.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { parseCsv } from './support/csv.ts';

/** The summary line the widget shows of an action. */
const widgetSummary = (tool: string, args: Record<string, unknown>) =>
  summarizeAction(tool, args, SUMMARY_LENGTH.widget).text;

const run = promisify(execFile);
const pdftotextSkip = await run('pdftotext', ['-v'])
  .then(() => undefined)
  .catch(() => 'pdftotext not found (apt-get install poppler-utils): PDF text checks skipped');

// HTML payloads: each would set window.__xss, or leave an element behind, if it were markup.
const IMG = '<img src=x onerror="window.__xss=1">';
const SCRIPT = '<script>window.__xss=1</script>';
const SVG = '"><svg onload=window.__xss=1>';
const QUOTE = "' autofocus onfocus='window.__xss=1' x='";
const JS_URL = 'javascript:window.__xss=1//';

/** Only these ever load: the service and the customer page on loopback; anything else is aborted. */
const LOOPBACK = new Set(['127.0.0.1', 'localhost']);

const yamlString = (value: string) => JSON.stringify(value);

/**
 * A raw 2025-era MCP session on /mcp/<slug> as `agent` (X-Service-Agent): `hold(name, args)` calls a
 * tool and returns the reference of the hold its held answer names.
 */
async function mcpAgent(t: TestService, key: string, slug: string, agent: string) {
  const headers = {
    authorization: `Bearer ${key}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'x-service-agent': agent,
  };
  const init = await fetch(`${t.url}/mcp/${slug}`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  assert.equal(init.status, 200);
  await init.arrayBuffer();
  const session = init.headers.get('mcp-session-id')!;
  let id = 1;
  return async (name: string, args: Record<string, unknown>): Promise<string> => {
    id += 1;
    const response = await fetch(`${t.url}/mcp/${slug}`, {
      method: 'POST',
      headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
    });
    assert.equal(response.status, 200);
    const answer = (await rpcMessages(response)).find((message) => message.id === id);
    const envelope = JSON.parse(answer?.result?.content?.[1]?.text ?? 'null')?.service;
    assert.equal(envelope?.status, 'held', JSON.stringify(answer));
    return envelope.reference as string;
  };
}

async function submitHold(t: TestService, key: string, overrides: Record<string, unknown>) {
  const answer = await call(t.url, 'POST', '/api/v1/holds', { key, body: submission(overrides) });
  assert.equal(answer.status, 201, answer.text);
  assert.equal(answer.body.status, 'pending', answer.text);
  return answer.body.id as string;
}

describe('hostile values in a browser', { skip: browserSkip, concurrency: 1 }, () => {
  const NAME = `Acme ${IMG}`;
  // Valid (https), yet it would end the attribute if it were not escaped.
  const LOGO = `https://127.0.0.1:1/logo.png?${SVG}`;
  const ADMIN_NAME = `Ada ${SCRIPT}`;
  const BOB_NAME = `Bob ${QUOTE}`;
  const CONNECTION = `Tools ${SVG}`;
  const MCP_TOOL = IMG;
  const MCP_AGENT = `${SVG} ${QUOTE}`;
  const MCP_ARGS = { text: SCRIPT, link: JS_URL, [IMG]: SVG, nested: { [QUOTE]: [IMG, SCRIPT] } };
  const API_ARGS = { note: SCRIPT, url: JS_URL, [SVG]: IMG, quote: QUOTE };
  const API_CONTEXT = { ticket: SVG, html: IMG, href: JS_URL };
  const API_AGENT = { id: `agent-${SVG}${QUOTE}`, label: `${IMG} ${SCRIPT}` };
  const COMMENT = `${SVG} ${IMG} ${JS_URL}`;

  let browser: Browser;
  let t: TestService;
  let recorder: RecordingUpstream;
  let desk: Server;
  let workspace: Workspace;
  let key = '';
  /** The MCP hold, a pending Core API hold, and one Bob rejected with a comment. */
  const ids = { mcp: '', api: '', decided: '' };
  const pages: TestPage[] = [];

  before(async () => {
    [browser, t, recorder] = await Promise.all([
      launchBrowser(),
      startTestService(sqlite, { env: { ALLOW_PRIVATE_TARGETS: 'true' } }),
      startRecordingUpstream(),
    ]);
    ({ workspace, key } = await t.workspace({
      config: `name: ${yamlString(NAME)}
branding: { logo_url: ${yamlString(LOGO)}, accent_color: "#a13" }
members:
  - { email: admin@acme.test, name: ${yamlString(ADMIN_NAME)}, role: admin }
  - { email: bob@acme.test, name: ${yamlString(BOB_NAME)}, role: admin }
tools:
  - { connection: SDK, tool: send_invoice, classification: approval }
mcp_servers:
  - { slug: rec, name: ${yamlString(CONNECTION)}, url: "${recorder.url}" }
`,
    }));
    // Configured as given: nothing was cleaned on the way in.
    const stored = (await findWorkspace(t.service.ctx.db, workspace.id))!;
    assert.deepEqual([stored.name, stored.logoUrl], [NAME, LOGO]);

    // The upstream lists them: the proxy answers a tool it does not list with -32602, no hold.
    recorder.offer(MCP_TOOL, `${SCRIPT}${SVG}`);
    const agent = await mcpAgent(t, key, 'rec', MCP_AGENT);
    ids.mcp = await agent(MCP_TOOL, MCP_ARGS);
    ids.api = await submitHold(t, key, {
      arguments: API_ARGS,
      context: API_CONTEXT,
      agent_identity: API_AGENT,
    });
    ids.decided = await submitHold(t, key, {
      arguments: API_ARGS,
      context: API_CONTEXT,
      agent_identity: API_AGENT,
    });
    await decideAs(t, workspace.id, ids.decided, 'reject', 'bob@acme.test', COMMENT);
    assert.equal(recorder.calls.length, 0, 'the held call did not run');

    // The customer's own page, on another origin, embedding the widget.
    desk = createServer((request, response) => {
      const token = new URL(request.url ?? '/', 'http://127.0.0.1').searchParams.get('token') ?? '';
      if (!/^emb_[A-Za-z0-9_-]{43}$/.test(token)) return void response.writeHead(404).end();
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html>
<html lang="en"><head><meta charset="utf-8" /><title>Desk</title></head>
<body><script src="${t.url}/widget.js" defer></script><approvals-inbox token="${token}"></approvals-inbox></body>
</html>`);
    });
    await new Promise<void>((resolve) => desk.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await closeBrowser(browser);
    await new Promise((resolve) => desk?.close(resolve));
    await t?.close();
    await recorder?.close();
  });

  /** A fresh profile that can reach loopback only. */
  async function open() {
    const opened = await openPage(browser);
    pages.push(opened);
    await opened.context.route(
      (url) => !LOOPBACK.has(url.hostname),
      (route) => route.abort(),
    );
    return opened;
  }

  async function signIn(email = 'admin@acme.test', target = workspace) {
    const opened = await open();
    const { url } = await inviteLink(t.service.ctx, target, email);
    await opened.page.goto(url);
    await opened.page.getByRole('button', { name: 'Continue to approvals' }).click();
    await opened.page.waitForURL('**/app/inbox');
    return opened;
  }

  /**
   * Nothing ran and nothing grew: no __xss, no dialog, no script but the page's own, no element a
   * payload would make, no event-handler attribute, no javascript: link, no script CSP had to block.
   */
  async function checkClean(
    opened: TestPage,
    where: string,
    ownScripts: string[] = ['/app/static/app.js', '/app/static/time.js', '/app/static/copy.js'],
  ) {
    const { page, errors, dialogs } = opened;
    // Image errors and focus handlers would fire asynchronously: give them a moment.
    await page.waitForTimeout(150);
    const found = await page.evaluate(() => {
      const all = [...document.querySelectorAll('*')];
      return {
        xss: (window as any).__xss,
        scripts: [...document.scripts].map((s) => s.getAttribute('src') ?? `inline: ${s.textContent}`),
        grown: all
          .filter((el) => el.matches('svg, iframe, object, embed, base, img[src="x"], [autofocus]'))
          .map((el) => el.outerHTML),
        handlers: all.flatMap((el) =>
          [...el.attributes].filter((a) => /^on/i.test(a.name)).map((a) => `${el.tagName} ${a.name}`),
        ),
        javascriptLinks: all
          .filter((el) => /^\s*javascript:/i.test(el.getAttribute('href') ?? el.getAttribute('action') ?? ''))
          .map((el) => el.outerHTML),
      };
    });
    assert.equal(found.xss, undefined, `${where}: window.__xss`);
    assert.deepEqual(found.scripts, ownScripts, `${where}: scripts`);
    assert.deepEqual(found.grown, [], `${where}: elements from a payload`);
    assert.deepEqual(found.handlers, [], `${where}: event handlers`);
    assert.deepEqual(found.javascriptLinks, [], `${where}: javascript: links`);
    assert.deepEqual(dialogs, [], `${where}: dialogs`);
    const blocked = errors.filter((e) => /Refused to (execute|evaluate|load the script)|inline/i.test(e));
    assert.deepEqual(blocked, [], `${where}: scripts blocked by CSP (so injected)`);
  }

  /** A definition list's facts, `dt` text to its `dd`. */
  async function facts(scope: Locator): Promise<Record<string, string>> {
    return scope
      .locator('dl.facts')
      .first()
      .evaluate((dl) => {
        const out: Record<string, string> = {};
        for (const dt of dl.querySelectorAll('dt'))
          out[dt.textContent!.trim()] = (dt.nextElementSibling as HTMLElement).innerText.trim();
        return out;
      });
  }

  async function checkHeader(page: Page, member = ADMIN_NAME) {
    assert.equal(await page.locator('header.top .brand span').innerText(), NAME);
    assert.equal(await page.locator('header.top .brand img').getAttribute('src'), LOGO);
    assert.equal(await page.locator('header.top .who').innerText(), `${member} · admin`);
  }

  async function checkMcpCard(page: Page) {
    const card = page.locator(`#hold-${ids.mcp}`);
    await card.waitFor();
    assert.equal(await card.locator('h2').innerText(), MCP_TOOL);
    assert.equal(await card.locator('h2 a').getAttribute('href'), `/app/holds/${ids.mcp}`);
    const shown = await facts(card);
    assert.equal(shown.Connection, CONNECTION);
    assert.equal(shown.Agent, MCP_AGENT);
    assertArgumentsShown(shown.Arguments!, MCP_ARGS);
    // The MCP session the call came in, whose stream hears the decision (no X-Service-Session sent).
    const context = JSON.parse(shown.Context!);
    assert.deepEqual(Object.keys(context), ['mcp_server', 'mcp_session']);
    assert.equal(context.mcp_server, 'rec');
    assert.match(context.mcp_session, /^mcps_/);
  }

  async function checkApiCard(page: Page, id: string) {
    const card = page.locator(`#hold-${id}`);
    await card.waitFor();
    assert.equal(await card.locator('h2').innerText(), 'send_invoice');
    const shown = await facts(card);
    assert.equal(shown.Agent, `${API_AGENT.label} (${API_AGENT.id})`);
    assertArgumentsShown(shown.Arguments!, API_ARGS);
    assert.deepEqual(JSON.parse(shown.Context!), API_CONTEXT);
  }

  test('inbox, hold pages, history, evidence, reports and branding show every payload as text', async () => {
    const opened = await signIn();
    const { page } = opened;

    await checkHeader(page);
    // Each hold on its line, and in full when selected.
    for (const id of [ids.mcp, ids.api]) await page.locator(`#line-${id}`).waitFor();
    assert.equal(await page.locator(`#line-${ids.mcp} .tool`).innerText(), MCP_TOOL);
    await page.goto(`${t.url}/app/inbox?hold=${ids.mcp}`);
    await checkMcpCard(page);
    await page.goto(`${t.url}/app/inbox?hold=${ids.api}`);
    await checkApiCard(page, ids.api);
    await checkClean(opened, 'inbox');

    // A call arriving while the inbox is open: announced, then listed and shown as text.
    await page.locator('body[data-live="connected"]').waitFor({ state: 'attached' });
    const liveTool = `${SCRIPT}${SVG}`;
    const live = await (await mcpAgent(t, key, 'rec', MCP_AGENT))(liveTool, MCP_ARGS);
    await page.getByRole('link', { name: '1 new hold: show' }).click();
    await page.locator(`#line-${live}`).waitFor();
    assert.equal(await page.locator(`#line-${live} .tool`).innerText(), liveTool);
    await page.locator(`#line-${live} a`).click();
    assert.equal(await page.locator(`#hold-${live} h2`).innerText(), liveTool);
    assertArgumentsShown((await facts(page.locator(`#hold-${live}`))).Arguments!, MCP_ARGS);
    await checkClean(opened, 'inbox, live');

    await page.goto(`${t.url}/app/holds/${ids.mcp}`);
    await checkMcpCard(page);
    assert.equal(await page.title(), `${MCP_TOOL} · Approvals`);
    await checkClean(opened, 'hold page (MCP)');

    await page.goto(`${t.url}/app/holds/${ids.decided}`);
    await checkApiCard(page, ids.decided);
    const decision = page.locator('.four-eyes ul.decisions li');
    assert.equal(await decision.count(), 1);
    assert.equal(await decision.locator('strong').innerText(), BOB_NAME);
    assert.equal(await decision.locator('blockquote').innerText(), COMMENT);
    assert.ok((await page.locator('main').innerText()).includes(`via inbox — ${COMMENT}`));
    await checkHeader(page);
    await checkClean(opened, 'hold page (decided)');

    await page.goto(`${t.url}/app/history`);
    const row = (id: string) => page.locator('tbody tr', { has: page.locator(`a[href="/app/holds/${id}"]`) });
    const mcpCells = row(ids.mcp).locator('td');
    assert.equal(await mcpCells.nth(1).locator('a').innerText(), MCP_TOOL);
    assert.equal(await mcpCells.nth(1).locator('.muted').innerText(), CONNECTION);
    assert.equal(await mcpCells.nth(2).innerText(), MCP_AGENT);
    assert.equal(await row(ids.api).locator('td').nth(2).innerText(), API_AGENT.label);
    await checkClean(opened, 'history');

    // Filters come back in the form as values, never as markup.
    const filters = new URLSearchParams({ tool: SVG, agent: QUOTE, status: SCRIPT, from: IMG });
    await page.goto(`${t.url}/app/history?${filters}`);
    assert.equal(await page.locator('#f-tool').inputValue(), SVG);
    assert.equal(await page.locator('#f-agent').inputValue(), QUOTE);
    await checkClean(opened, 'history with hostile filters');

    // The rule builder, prefilled from the new tool's "write a rule" link.
    const prefill = new URLSearchParams({ connection: CONNECTION, tool: MCP_TOOL });
    const pagesToVisit = [
      '/app/evidence',
      '/app/reports',
      '/app/widget',
      '/app/admin/members',
      '/app/admin/mcp-servers',
      '/app/admin/rules',
      `/app/admin/rules?new&${prefill}`,
      '/app/admin/branding',
    ];
    for (const path of pagesToVisit) {
      const answer = await page.goto(`${t.url}${path}`);
      assert.equal(answer?.status(), 200, path);
      await checkHeader(page);
      if (path === '/app/admin/rules') {
        // The MCP tool waits for a classification under its connection, both shown as text.
        assert.ok(
          await page.getByText(MCP_TOOL, { exact: true }).first().isVisible(),
          'the new tool is listed',
        );
        assert.ok(
          await page.getByText(CONNECTION, { exact: true }).first().isVisible(),
          'its connection too',
        );
      }
      if (path === '/app/admin/members') {
        assert.ok(await page.locator('main').getByText(BOB_NAME).first().isVisible(), 'member names as text');
      }
      await checkClean(opened, path);
    }
    // The branding form holds the saved values as field values.
    assert.equal(await page.locator('#b-name').inputValue(), NAME);
    assert.equal(await page.locator('#b-logo').inputValue(), LOGO);

    // The decision link page (e-mail, SMS) for the MCP hold, in a browser without a session.
    const hold = (await findHold(t.service.ctx.db, workspace.id, ids.mcp))!;
    const admin = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'admin@acme.test'))!;
    const link = await mintDecisionLink(t.service.ctx, { hold, memberId: admin.id, channel: 'email' });
    const stranger = await open();
    await stranger.page.goto(link);
    const linkText = await stranger.page.locator('main').innerText();
    for (const value of [MCP_TOOL, CONNECTION, MCP_AGENT]) assert.ok(linkText.includes(value), value);
    assertArgumentsShown(await stranger.page.locator('.args').innerText(), MCP_ARGS);
    await checkClean(stranger, 'decision link');

    // A hold reference made of markup: the 404 page does not echo it.
    const missing = await page.goto(`${t.url}/app/holds/${encodeURIComponent(SVG)}`);
    assert.equal(missing?.status(), 404);
    await checkClean(opened, 'hold page 404');
  });

  test('branding form: javascript: logo and a markup accent are refused; the echo is text', async () => {
    const opened = await signIn();
    const { page } = opened;
    await page.goto(`${t.url}/app/admin/branding`);
    // Past the browser's own checks (a hand-made request could send anything).
    await page.locator('form.decide').evaluate((form) => form.setAttribute('novalidate', ''));
    await page.locator('#b-accent').evaluate((input) => input.removeAttribute('maxlength'));
    const accent = `#000;}</style>${SCRIPT}`;
    await page.locator('#b-name').fill(`New ${SVG}`);
    await page.locator('#b-logo').fill(JS_URL);
    await page.locator('#b-accent').fill(accent);
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/app/admin/branding') && r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Save' }).click(),
    ]);
    assert.equal(answer.status(), 422);
    assert.match(await page.locator('#b-logo-error').innerText(), /https/);
    assert.match(await page.locator('#b-accent-error').innerText(), /hex colour/);
    assert.equal(await page.locator('#b-name').inputValue(), `New ${SVG}`);
    assert.equal(await page.locator('#b-logo').inputValue(), JS_URL);
    assert.equal(await page.locator('#b-accent').inputValue(), accent);
    assert.equal(await page.locator('#preview-title + div .brand span').innerText(), `New ${SVG}`);
    await checkClean(opened, 'branding refused');
    const stored = (await findWorkspace(t.service.ctx.db, workspace.id))!;
    assert.deepEqual(
      [stored.name, stored.logoUrl, stored.accentColor],
      [NAME, LOGO, '#a13'],
      'nothing saved',
    );

    // A preview of a valid but hostile name saves nothing and shows it as text.
    await page.goto(`${t.url}/app/admin/branding`);
    await page.locator('#b-name').fill(`Preview ${IMG}`);
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.getByText('This is a preview').waitFor();
    assert.equal(await page.locator('#preview-title + div .brand span').innerText(), `Preview ${IMG}`);
    await checkClean(opened, 'branding preview');
    assert.equal((await findWorkspace(t.service.ctx.db, workspace.id))!.name, NAME);
  });

  test('the public status page shows the branding as text, and nothing of the agent', async () => {
    const opened = await open();
    const { page } = opened;
    for (const id of [ids.mcp, ids.decided]) {
      const answer = await page.goto(`${t.url}/a/${id}`);
      assert.equal(answer?.status(), 200);
      assert.equal(await page.locator('header span').innerText(), NAME);
      assert.equal(await page.locator('header img').getAttribute('src'), LOGO);
      const text = await page.locator('main').innerText();
      // (The tool name is in the workspace's name, so it is not looked for.)
      for (const value of [MCP_AGENT, CONNECTION, API_AGENT.label, COMMENT, BOB_NAME, API_AGENT.id])
        assert.ok(!text.includes(value), `the status page leaves out ${value}`);
      await checkClean(opened, `status page ${id}`, []);
    }
    const unknown = await page.goto(`${t.url}/a/${encodeURIComponent(SVG)}`);
    assert.equal(unknown?.status(), 404);
    assert.ok(!(await page.content()).includes('svg'), 'the reference is not echoed');
    await checkClean(opened, 'status page 404', []);
  });

  test('the widget shows the MCP tool name, connection, agent and arguments as text', async () => {
    const admin = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'admin@acme.test'))!;
    const { token } = await mintEmbedToken(t.service.ctx, admin);
    const opened = await open();
    const { page, dialogs } = opened;
    const { port } = desk.address() as AddressInfo;
    await page.goto(`http://127.0.0.1:${port}/desk?token=${token}`);
    const card = (id: string) => page.locator(`approvals-inbox [data-hold="${id}"]`);
    await card(ids.mcp).waitFor();
    await card(ids.api).waitFor();
    assert.equal(
      await card(ids.mcp).locator('div').first().textContent(),
      `${MCP_AGENT} wants to run ${MCP_TOOL} on ${CONNECTION}`,
    );
    assert.equal(await card(ids.mcp).locator('.summary').textContent(), widgetSummary(MCP_TOOL, MCP_ARGS));
    assert.equal(
      await card(ids.api).locator('div').first().textContent(),
      `${API_AGENT.label} wants to run send_invoice on SDK`,
    );
    assert.equal(
      await card(ids.api).locator('.summary').textContent(),
      widgetSummary('send_invoice', API_ARGS),
    );
    await page.waitForTimeout(150);
    assert.equal(await page.evaluate(() => (window as any).__xss), undefined);
    const inShadow = await page
      .locator('approvals-inbox')
      .evaluate((host) =>
        [...host.shadowRoot!.querySelectorAll('*')]
          .filter(
            (el) =>
              el.matches('script, img, svg, iframe, object, embed') ||
              [...el.attributes].some((a) => /^on/i.test(a.name)),
          )
          .map((el) => el.outerHTML),
      );
    assert.deepEqual(inShadow, []);
    assert.deepEqual(dialogs, []);
  });

  test('defence in depth: branding forced into storage past validation still renders inert', async () => {
    const forced = await t.workspace({
      config: 'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n',
    });
    const id = await submitHold(t, forced.key, { tool_name: 'anything' });
    const logo = `${JS_URL}"><svg onload=window.__xss=1>`;
    const accent = `#000;}</style>${SCRIPT}<style>" onmouseover="window.__xss=1`;
    await t.service.ctx.db.run(
      'UPDATE workspaces SET name = $2, logo_url = $3, accent_color = $4 WHERE id = $1',
      [forced.workspace.id, SCRIPT, logo, accent],
    );
    const opened = await signIn('admin@acme.test', forced.workspace);
    await opened.page.locator(`#line-${id}`).waitFor();
    assert.equal(await opened.page.locator('header.top .brand span').innerText(), SCRIPT);
    assert.equal(await opened.page.locator('header.top .brand img').getAttribute('src'), logo);
    assert.equal(await opened.page.locator('body').getAttribute('style'), `--accent:${accent}`);
    await checkClean(opened, 'inbox with forced branding');

    const status = await open();
    await status.page.goto(`${t.url}/a/${id}`);
    assert.equal(await status.page.locator('header span').innerText(), SCRIPT);
    assert.equal(await status.page.locator('header img').getAttribute('src'), logo);
    assert.equal(await status.page.locator('style').count(), 1, 'the accent did not close the style');
    await checkClean(status, 'status page with forced branding', []);
  });
});

// ---------------------------------------------------------------------------------------------------
// Reports: CSV and PDF.

/** What a spreadsheet would run: a cell starting with = + - @ tab or CR. */
const FORMULA_START = /^[=+\-@\t\r]/;
/** The cell a formula-like text becomes: an apostrophe in front, nothing else changed. */
const neutral = (text: string) => (FORMULA_START.test(text) ? `'${text}` : text);

/** Entries that make a PDF act: run script, launch, open links, act on open or on events. */
const PDF_ACTIONS = [
  'JavaScript',
  'JS',
  'Launch',
  'URI',
  'OpenAction',
  'AA',
  'SubmitForm',
  'ImportData',
  'GoToR',
  'GoToE',
  'EmbeddedFile',
  'RichMedia',
  'XFA',
];

/** The names (`/Type`, `/JS`, ...) a stretch of PDF syntax uses outside its strings and comments. */
function namesIn(text: string, names: Set<string>) {
  for (let i = 0; i < text.length;) {
    const c = text[i]!;
    if (c === '%') {
      while (i < text.length && text[i] !== '\n' && text[i] !== '\r') i++;
    } else if (c === '(') {
      // A literal string: balanced parentheses, backslash escapes.
      let depth = 0;
      for (; i < text.length; i++) {
        if (text[i] === '\\') i++;
        else if (text[i] === '(') depth++;
        else if (text[i] === ')' && --depth === 0) break;
      }
      i++;
    } else if (c === '<') {
      // `<<` opens a dictionary; a single `<` a hex string.
      const end = text[i + 1] === '<' ? i + 1 : text.indexOf('>', i);
      i = end === -1 ? text.length : end + 1;
    } else if (c === '/') {
      let j = i + 1;
      while (j < text.length && !/[\s()<>[\]{}/%]/.test(text[j]!)) j++;
      names.add(
        text
          .slice(i + 1, j)
          .replace(/#([0-9a-fA-F]{2})/g, (_, hex) => String.fromCharCode(parseInt(hex, 16))),
      );
      i = j;
    } else i++;
  }
}

/**
 * A PDF split into its syntax outside streams (where dictionaries and their entries live) and its
 * streams, inflated where compressed; with every name used in either.
 */
function pdfStructure(bytes: Buffer) {
  const text = bytes.toString('latin1');
  let outside = '';
  const streams: string[] = [];
  let at = 0;
  for (const match of text.matchAll(/(?<!end)stream\r?\n/g)) {
    if (match.index < at) continue;
    const start = match.index + match[0].length;
    const end = text.indexOf('endstream', start);
    assert.ok(end > 0, 'every stream ends');
    outside += `${text.slice(at, match.index)}\n`;
    const body = bytes.subarray(start, end);
    let inflated = body;
    try {
      inflated = inflateSync(body);
    } catch {
      // not compressed
    }
    streams.push(inflated.toString('latin1'));
    at = end + 'endstream'.length;
  }
  outside += text.slice(at);
  const names = new Set<string>();
  namesIn(outside, names);
  for (const stream of streams) namesIn(stream, names);
  return { outside, streams, names };
}

/** Fails when the PDF has any action entry; `raw`: also when the name occurs anywhere outside streams. */
function assertNoActions(bytes: Buffer, where: string, { raw = false } = {}) {
  assert.equal(bytes.subarray(0, 5).toString(), '%PDF-', where);
  const { outside, names } = pdfStructure(bytes);
  assert.ok(names.has('Type') && names.has('Page') && names.has('Font'), `${where}: the PDF was read`);
  const found = PDF_ACTIONS.filter((name) => names.has(name));
  assert.deepEqual(found, [], `${where}: action entries`);
  if (raw) {
    const anywhere = new RegExp(`/(?:${PDF_ACTIONS.join('|')})(?![A-Za-z0-9])`, 'g');
    assert.deepEqual(outside.match(anywhere) ?? [], [], `${where}: action names in the raw bytes`);
  }
}

async function pdfToText(bytes: Buffer, dir: string): Promise<string> {
  const file = join(dir, `report-${Math.random()}.pdf`);
  writeFileSync(file, bytes);
  return (await run('pdftotext', ['-layout', file, '-'])).stdout;
}

test('the PDF check sees action entries, also hidden with #-escapes, and not words inside strings', async () => {
  const make = (draw: (doc: PDFKit.PDFDocument) => void) =>
    new Promise<Buffer>((resolve, reject) => {
      const doc = new PDFDocument({ info: { Title: '/JavaScript /JS (app.alert(1)) /OpenAction' } });
      const chunks: Buffer[] = [];
      doc.on('data', (chunk: Buffer) => chunks.push(chunk));
      doc.on('end', () => resolve(Buffer.concat(chunks)));
      doc.on('error', reject);
      draw(doc);
      doc.end();
    });
  const plain = await make((doc) => doc.text('/Launch /URI (x) <</AA>>'));
  assertNoActions(plain, 'names only inside strings and text');
  const linked = await make((doc) => doc.text('a link', { link: 'https://evil.test' }));
  assert.throws(() => assertNoActions(linked, 'a link'), /URI/);
  const hidden = Buffer.from(
    plain.toString('latin1').replace('/Type /Catalog', '/Type /Catalog /Open#41ction 1 0 R'),
    'latin1',
  );
  assert.throws(() => assertNoActions(hidden, 'an escaped name'), /OpenAction/);
});

/**
 * A name that pdfkit's standard-font text encoding (0.20: `char.toString(16)`, unpadded) shows as
 * `shown`: the leading control character is written as one hex digit, which shifts every digit after
 * it, so the characters chosen here pair up into the bytes of `shown` (each must not end in a 0 nibble).
 */
function forgedForPdf(shown: string): string {
  const bytes = [...Buffer.from(shown, 'latin1')];
  const codes = [0x60 | (bytes[0]! >> 4)];
  for (let k = 1; k < bytes.length; k++) codes.push(((bytes[k - 1]! & 0xf) << 4) | (bytes[k]! >> 4));
  codes.push((bytes.at(-1)! & 0xf) << 4);
  return `\u0001${String.fromCharCode(...codes)}`;
}

for (const backend of backends) {
  describe(`hostile values in reports on ${backend.name}`, { skip: backend.skip }, () => {
    // Text a spreadsheet would take for a formula, and HTML for good measure.
    const NAME = `=2+3 ${SCRIPT}`;
    const CONNECTION = '@SUM(1+1)';
    const TAB_TOOL = '\t=1+1';
    // A tool an agent really calls, whose name the PDF would show as another, harmless-looking tool.
    const FORGED = forgedForPdf('read_balance');
    const TOOLS = ['=HYPERLINK("http://evil.test","x")', "+cmd|' /C calc'!A0", '-2+3', TAB_TOOL, IMG, FORGED];
    const MCP_AGENT = `@agent ${SVG}`;
    const API_AGENT = { id: `=cmd|' /C calc'!A0`, label: IMG };
    const APPROVER = '+SUM(1,2)';
    // PDF syntax that would add an action if it were written as syntax rather than as a string.
    const PDF_NAME = 'x) >> /OpenAction << /S /JavaScript /JS (app.alert(1)) >> (';
    const PDF_TOOL = ') Tj /URI (https://evil.test) /Launch <</F (calc.exe)>> (';
    const PDF_AGENT = '/AA <</O <</S /JavaScript /JS (app.alert(2))>>>>';

    let t: TestService;
    let recorder: RecordingUpstream;
    let key = '';
    let pdfKey = '';
    /** The MCP holds, one per tool name, in the order of TOOLS; the first one Bob rejected. */
    const ids: string[] = [];
    let apiId = '';

    before(async () => {
      [t, recorder] = await Promise.all([
        startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } }),
        startRecordingUpstream(),
      ]);
      const config = (name: string, connection: string) => `name: ${yamlString(name)}
branding: { accent_color: "#a13" }
members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: bob@acme.test, name: ${yamlString(APPROVER)}, role: admin }
tools:
  - { connection: SDK, tool: send_invoice, classification: approval }
mcp_servers:
  - { slug: rec, name: ${yamlString(connection)}, url: "${recorder.url}" }
`;
      let workspace: Workspace;
      ({ workspace, key } = await t.workspace({ config: config(NAME, CONNECTION) }));
      recorder.offer(...TOOLS, PDF_TOOL);
      const agent = await mcpAgent(t, key, 'rec', MCP_AGENT);
      for (const tool of TOOLS) ids.push(await agent(tool, { text: SCRIPT }));
      apiId = await submitHold(t, key, { agent_identity: API_AGENT, arguments: { note: IMG } });
      await decideAs(t, workspace.id, ids[0]!, 'reject', 'bob@acme.test', IMG);

      const other = await t.workspace({ config: config(PDF_NAME, PDF_TOOL) });
      pdfKey = other.key;
      const pdfAgent = await mcpAgent(t, pdfKey, 'rec', PDF_AGENT);
      const held = await pdfAgent(PDF_TOOL, { text: PDF_NAME });
      await decideAs(t, other.workspace.id, held, 'reject', 'bob@acme.test');
    });
    after(async () => {
      await t?.close();
      await recorder?.close();
    });

    const csv = async (kind: 'activity' | 'oversight', withKey = key) => {
      const answer = await call(t.url, 'GET', `/api/v1/reports/${kind}`, { key: withKey });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.headers.get('content-type'), 'text/csv; charset=utf-8');
      assert.match(answer.headers.get('content-disposition') ?? '', /^attachment; /);
      const rows = parseCsv(answer.text);
      for (const [index, row] of rows.entries()) {
        for (const cell of row) assert.doesNotMatch(cell, FORMULA_START, `${kind} row ${index}: ${cell}`);
      }
      return rows;
    };

    const pdf = async (kind: 'activity' | 'oversight', withKey = key) => {
      const response = await fetch(`${t.url}/api/v1/reports/${kind}`, {
        headers: { authorization: `Bearer ${withKey}`, accept: 'application/pdf' },
      });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('content-type'), 'application/pdf');
      assert.match(response.headers.get('content-disposition') ?? '', /^attachment; filename=".+\.pdf"$/);
      return Buffer.from(await response.arrayBuffer());
    };

    test('activity CSV: MCP tool names, connection and agents as text, formulas neutralized', async () => {
      const [header, ...rows] = await csv('activity');
      const column = (name: string) => header!.indexOf(name);
      const row = (id: string) => rows.find((r) => r[0] === id)!;
      for (const [index, tool] of TOOLS.entries()) {
        const cells = row(ids[index]!);
        assert.equal(cells[column('connection')], neutral(CONNECTION));
        assert.equal(cells[column('tool_name')], neutral(tool), tool);
        assert.equal(cells[column('agent_id')], neutral(MCP_AGENT));
      }
      assert.equal(row(ids[0]!)[column('approvers')], neutral(APPROVER));
      assert.equal(row(ids[0]!)[column('channel')], 'inbox');
      // HTML is just text here; the neutralized cells differ from the value by the apostrophe only.
      assert.equal(row(ids[TOOLS.indexOf(IMG)]!)[column('tool_name')], IMG);
      const api = row(apiId);
      assert.equal(api[column('tool_name')], 'send_invoice');
      assert.equal(api[column('agent_id')], `'${API_AGENT.id}`);
    });

    test('oversight CSV: workspace name, per-tool and unclassified subjects and approver names neutralized', async () => {
      const [header, ...rows] = await csv('oversight');
      assert.deepEqual(header, ['section', 'subject', 'metric', 'value']);
      const value = (section: string, subject: string, metric: string) => {
        const found = rows.find((r) => r[0] === section && r[1] === subject && r[2] === metric);
        assert.ok(found, `the CSV has ${section}|${subject}|${metric}`);
        return found[3];
      };
      assert.equal(value('report', '', 'workspace'), neutral(NAME));
      for (const tool of TOOLS) {
        const subject = neutral(`${CONNECTION}/${tool}`);
        assert.equal(value('tool', subject, 'holds'), '1', tool);
        assert.equal(value('unclassified', subject, 'holds'), '1', tool);
      }
      assert.equal(value('approver', 'bob@acme.test', 'name'), neutral(APPROVER));
    });

    /** The PDF's text (pdftotext -layout), runs of blanks squeezed to one space. */
    const pdfText = async (bytes: Buffer) =>
      (await pdfToText(bytes, t.storage.env.DATA_DIR)).replace(/[ \t]+/g, ' ');

    test('PDFs: no action entries, the payloads as plain text', { skip: pdftotextSkip }, async () => {
      const oversight = await pdf('oversight');
      const activity = await pdf('activity');
      assertNoActions(oversight, 'oversight', { raw: true });
      assertNoActions(activity, 'activity', { raw: true });
      const overText = await pdfText(oversight);
      const actText = await pdfText(activity);
      for (const [kind, text] of [
        ['oversight', overText],
        ['activity', actText],
      ] as const) {
        const pages = text.split('\f').filter((page) => page.trim() !== '');
        for (const [index, page] of pages.entries())
          assert.ok(page.startsWith(`${NAME}\n`), `${kind} page ${index + 1} starts with the workspace name`);
      }
      // Rows of "Tools still unclassified": connection, tool in full, first seen.
      for (const tool of [IMG, TOOLS[0]!, TOOLS[1]!, TOOLS[2]!])
        assert.ok(overText.includes(`\n${CONNECTION} ${tool} 20`), `${tool} in the PDF:\n${overText}`);
      assert.ok(overText.includes(`\n${APPROVER} bob@acme.test 1 0 1 `), overText);
      // The activity table cuts long cells short with an ellipsis: their beginnings, as text.
      assert.ok(actText.includes(` ${CONNECTION} / ${TOOLS[2]} ${MCP_AGENT.slice(0, 10)}`), actText);
      assert.ok(actText.includes(` SDK / send_invoice ${API_AGENT.id} live pending`), actText);
      // The tool's cell wraps at its blanks: its first word stays whole and plain.
      assert.ok(actText.includes(` ${CONNECTION} / <img`), actText);
    });

    test(
      'PDF: a control character in a tool name neither forges nor garbles the name shown',
      { skip: pdftotextSkip },
      async () => {
        const text = await pdfText(await pdf('oversight'));
        const unclassified = text.slice(text.indexOf('Tools still unclassified'));
        // Known to fail with pdfkit 0.20 unless src/reports/pdf/text.ts `printable` replaces control characters.
        assert.doesNotMatch(
          unclassified,
          /read_balance/,
          `the PDF shows a tool nobody called (the call was ${JSON.stringify(FORGED)})`,
        );
        // The tab may become a blank or a placeholder; what follows it must stay as it was.
        assert.match(
          unclassified,
          new RegExp(`\\n${escapeRegExp(CONNECTION)} \\S?=1\\+1 20`),
          'the tab tool',
        );
      },
    );

    test('PDFs: PDF syntax in the workspace name, a tool name and an agent stays text', async () => {
      for (const kind of ['oversight', 'activity'] as const) {
        const bytes = await pdf(kind, pdfKey);
        assertNoActions(bytes, `${kind} with PDF syntax`);
        if (pdftotextSkip) continue;
        const text = (await pdfToText(bytes, t.storage.env.DATA_DIR)).replace(/[ \t]+/g, ' ');
        assert.ok(text.includes(PDF_NAME), text);
        if (kind === 'oversight') assert.ok(text.includes(PDF_TOOL), text);
        else assert.ok(text.includes(PDF_AGENT.slice(0, 12)), text);
      }
    });
  });
}

function escapeRegExp(text: string) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
