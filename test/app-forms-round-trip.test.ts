/**
 * No admin form drops a field (issue 39): a workspace file that uses every field the file takes is
 * applied, then every form of the app that changes the workspace is loaded and submitted as shown, as
 * a browser sends it. After each one the export is the same as before, and so are the secrets it
 * leaves out (an MCP server's headers, the webhook's signing secret).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { exportConfig } from '../src/services/apply-config.ts';
import { findMcpServerBySlug } from '../src/store/mcp-servers.ts';
import { findWebhookEndpoint } from '../src/store/webhooks.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, formFields, type Session } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `name: Acme Round Trip
branding: { logo_url: "https://cdn.acme.test/logo.png", accent_color: "#0a7" }
members:
  - email: admin@acme.test
    name: Ada Admin
    role: admin
    phone: "+15550100"
    slack_user_id: U0ADA
    teams_user_id: 00000000-0000-0000-0000-0000000000a1
    channels: [email, sms, slack, teams]
    time_zone: Europe/Berlin
    quiet_hours: { from: "20:00", to: "07:30", weekends: true }
    digest_minutes: 5
    agents: [ada-bot, ada-helper]
  - email: ann@acme.test
    name: Ann Approver
    role: approver
    phone: "+15550101"
    channels: [sms]
    time_zone: America/New_York
    quiet_hours: { from: "22:00", to: "06:00" }
    digest_minutes: 0
    delegate: { to: olga@acme.test, from: "2030-01-07T09:00:00Z", until: "2030-01-14T17:30:00Z" }
  - { email: olga@acme.test, name: Olga Oncall, role: approver, slack_user_id: W0OLGA, channels: [slack] }
  - { email: vic@acme.test, name: Vic Viewer, role: viewer }
remind: { before: [15m], every: 2h }
notifications: { digest_minutes: 10 }
groups:
  finance: [ann@acme.test, olga@acme.test]
  oncall: [olga@acme.test]
tools:
  - { connection: SDK, tool: read_balance, classification: allow }
  - { connection: SDK, tool: send_invoice, classification: approval }
  - { connection: files, tool: files.delete, classification: deny }
rules:
  - name: Large payments
    connection: SDK
    tool: "pay.*"
    agent: "billing-*"
    when:
      - { arg: amount, op: gt, value: 1000 }
      - { arg: currency, op: in, value: [EUR, CHF] }
      - { arg: memo, op: matches, value: "^wire" }
      - { arg: ticket, op: exists }
      - { arg: meta, op: eq, value: { a: [1, null] } }
    frequency: { more_than: 3, per: hour, by: tool_and_agent }
    effect: approval
    approvers: [group:finance, role:admin]
    approvals_required: 2
    timeout_minutes: 120
    remind: { before: [30m, 10m], every: 20m }
    escalate:
      - { after: 15m, to: [group:oncall] }
      - { after: 1h, to: [role:admin, ann@acme.test] }
    signed: true
    bulk: true
    editable: [memo, meta.a]
    claim: { minutes: 45, halts_escalation: true }
    repeat_window_minutes: 15
  - { name: Refunds, tool: refund, effect: approval, signed: false, bulk: false, claim: { halts_escalation: false } }
  - { name: No shell, tool: shell.run, agent: ops, effect: deny, reason: "Not from agents", repeat_window_minutes: 0 }
  - { name: Reports by day, tool: report.export, frequency: { more_than: 0, per: day, by: agent }, effect: allow }
webhook: { url: "http://127.0.0.1:9/approvals" }
slack: { channel: C01ABCDEF }
teams: { channel: "19:round_trip-1@thread.tacv2" }
approvals: { require_passkey: true }
oauth: { grant_role: approver }
keys: { require_bound: true }
mcp_servers:
  - slug: files
    name: Files
    url: "http://127.0.0.1:7/mcp"
    headers: { Authorization: "Bearer files-token", X-Team: ops }
    call_timeout_seconds: 120
  - { slug: crm, name: CRM, url: "http://127.0.0.1:8/mcp" }
`;

/**
 * `self_approval` cannot go with `require_passkey` (an MCP client cannot sign), which WORKSPACE
 * says: a workspace of its own keeps it.
 */
const SELF_APPROVAL = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
rules:
  - { name: Own sends, tool: send_mail, effect: approval, self_approval: true }
  - { name: Not in the client, tool: "send_*", effect: approval, self_approval: false }
`;

/** The fields of every form of `page` that posts to `action`, each as a browser sends it. */
function formsPosting(page: string, action: string): [string, string][][] {
  const forms: [string, string][][] = [];
  for (let at = page.indexOf(`action="${action}"`); at >= 0; at = page.indexOf(`action="${action}"`, at + 1))
    forms.push(formFields(page.slice(at), action));
  return forms;
}

for (const backend of backends) {
  describe(
    `every admin form, saved as shown, keeps every field, on ${backend.name}`,
    { skip: backend.skip },
    () => {
      let t: TestService;
      let workspace: Workspace;
      let admin: Session;
      const { get, post, signIn } = appClient(() => t);
      /** The export, with the secrets it leaves out. */
      async function everything() {
        const { db, sealer } = t.service.ctx;
        const files = await findMcpServerBySlug(db, workspace.id, 'files');
        const webhook = await findWebhookEndpoint(db, workspace.id);
        return {
          config: await exportConfig(t.service.ctx, workspace),
          headers: JSON.parse(sealer.open(files!.headersSealed)) as unknown,
          webhookSecret: sealer.open(webhook!.secretSealed),
        };
      }

      /** Loads `page`, posts each of its forms to `action` as shown; nothing may change. */
      /**
       * Loads `page` and posts each of its forms to `action` as shown (`editing` picks the forms that
       * edit what is stored, not a blank one that adds); nothing may change.
       */
      async function saveAsShown(
        session: Session,
        page: string,
        action: string,
        options: {
          editing?: (fields: [string, string][]) => boolean;
          /** Fields a person types, the form asking for them blank. */
          typed?: Record<string, string>;
          expected?: number;
        } = {},
      ) {
        const { editing = () => true, typed = {}, expected = 303 } = options;
        const before = await everything();
        const forms = formsPosting((await get(session, page)).text, action).filter(editing);
        assert.ok(forms.length > 0, `a form on ${page} posting to ${action}`);
        for (const fields of forms) {
          const saved = await post(session, action, [
            ...fields.filter(([name]) => !(name in typed)),
            ...Object.entries(typed),
          ]);
          const main = saved.text.slice(saved.text.indexOf('<main'));
          assert.equal(saved.status, expected, `${action}: ${main.slice(0, 3000)}`);
        }
        assert.deepEqual(await everything(), before, `${page} → ${action}`);
      }

      before(async () => {
        // The targets are on this host, never reached: saving a form sends nothing to them.
        t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
        ({ workspace } = await t.workspace({ config: WORKSPACE }));
        admin = await signIn(workspace, 'admin@acme.test');
      });
      after(() => t?.close());

      test('the file applied: the export holds every field', async () => {
        const { config } = await everything();
        assert.equal(config.members?.length, 4);
        assert.deepEqual(config.rules?.[0]?.claim, { minutes: 45, halts_escalation: true });
        assert.equal(config.rules?.[1]?.bulk, false);
        assert.deepEqual(config.rules?.[0]?.editable, ['memo', 'meta.a']);
        assert.equal(config.rules?.[0]?.repeat_window_minutes, 15);
        assert.equal(config.rules?.[2]?.repeat_window_minutes, 0);
        assert.deepEqual(config.teams, { channel: '19:round_trip-1@thread.tacv2' });
        assert.deepEqual(config.notifications, { digest_minutes: 10 });
        assert.equal(
          config.mcp_servers?.[0]?.call_timeout_seconds ?? config.mcp_servers?.[1]?.call_timeout_seconds,
          120,
        );
      });

      test('rules and tools', async () => {
        const { config } = await everything();
        for (const rule of config.rules!) {
          const path = `/app/admin/rules/${encodeURIComponent(rule.name)}`;
          await saveAsShown(admin, path, path);
        }
        await saveAsShown(admin, '/app/admin/rules', '/app/admin/tools', {
          editing: (fields) => fields.some(([name, value]) => name === 'tool' && value !== ''),
        });
      });

      test('members and groups', async () => {
        const { config } = await everything();
        for (const member of config.members!) {
          const path = `/app/admin/members/${encodeURIComponent(member.email)}`;
          await saveAsShown(admin, path, path);
        }
        for (const name of Object.keys(config.groups!)) {
          await saveAsShown(admin, '/app/admin/members', `/app/admin/groups/${encodeURIComponent(name)}`);
        }
      });

      test('MCP servers, webhook, branding, Slack and Teams', async () => {
        for (const slug of ['files', 'crm']) {
          const path = `/app/admin/mcp-servers/${slug}`;
          await saveAsShown(admin, path, path);
        }
        // The webhook's form asks for a URL to change to: the one it shows, typed again, changes nothing.
        const webhook = '/app/admin/webhook';
        await saveAsShown(admin, webhook, webhook, { typed: { url: 'http://127.0.0.1:9/approvals' } });
        for (const path of ['/app/admin/branding', '/app/admin/slack', '/app/admin/teams'])
          await saveAsShown(admin, path, path);
      });

      test("each member's own settings, and the widget's embed token", async () => {
        const { config } = await everything();
        for (const member of config.members!) {
          const session = member.email === 'admin@acme.test' ? admin : await signIn(workspace, member.email);
          await saveAsShown(session, '/app/settings', '/app/settings');
        }
        await saveAsShown(admin, '/app/widget', '/app/widget/token', { expected: 200 });
      });

      test("a rule the requester approves in their client: the rule's form keeps self_approval", async () => {
        const { workspace: own } = await t.workspace({ config: SELF_APPROVAL });
        const session = await signIn(own, 'admin@acme.test');
        const before = await exportConfig(t.service.ctx, own);
        assert.deepEqual(
          before.rules?.map((rule) => rule.self_approval),
          [true, false],
        );
        for (const rule of before.rules!) {
          const path = `/app/admin/rules/${encodeURIComponent(rule.name)}`;
          for (const fields of formsPosting((await get(session, path)).text, path))
            assert.equal((await post(session, path, fields)).status, 303, path);
        }
        assert.deepEqual(await exportConfig(t.service.ctx, own), before);
      });
    },
  );
}
