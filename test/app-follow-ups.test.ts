/**
 * The app's side of reminders, escalation, delegation and quiet hours, on both backends with a clock the
 * tests move: a hold's page shows each escalation step and reminder (when, whom it added and asked); a
 * delegate finds the hold in the inbox "for Ann", decides it, and the page says "Dan approved for Ann";
 * every member sets and clears their own time zone, quiet hours and delegation (never another member's),
 * evidenced with a webhook; the admin Members page round-trips the new fields.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { applyConfig, exportConfig, parseConfig } from '../src/services/apply-config.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import {
  appClient,
  type Fields,
  formFields,
  lastEvidence,
  type Session,
  unescapeHtml,
} from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { startTestService, TestClock, type TestService } from './support/service.ts';

const MIN = 60_000;
/** A Wednesday, 10:00 UTC. */
const T0 = Date.parse('2026-11-25T10:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

const WORKSPACE = `
members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - email: ann@acme.test
    name: Ann
    role: approver
    delegate: { to: dan@acme.test, from: '${iso(T0)}', until: '${iso(T0 + 8 * 60 * MIN)}' }
  - { email: bob@acme.test, name: Bob, role: approver }
  - { email: dan@acme.test, name: Dan, role: approver, agents: [dan-bot] }
  - { email: olga@acme.test, name: Olga, role: approver }
  - { email: oscar@acme.test, name: Oscar, role: approver }
  - { email: vic@acme.test, name: Vic, role: viewer }
groups: { oncall: [olga@acme.test, oscar@acme.test] }
webhook: { url: 'http://127.0.0.1:9/hooks' }
tools:
  - { connection: SDK, tool: deploy, classification: approval }
  - { connection: SDK, tool: pay, classification: approval }
rules:
  - { name: Deploys, tool: deploy, effect: approval, approvers: [bob@acme.test], timeout_minutes: 60, remind: [30m], escalate: { after: 15m, to: [group:oncall] } }
  - { name: Payments, tool: pay, effect: approval, approvers: [ann@acme.test], timeout_minutes: 600 }
`;

/** A page's text as read: tags out, entities back, white space as single spaces. */
const textOf = (page: string) =>
  unescapeHtml(page.replace(/<[^>]+>/g, ' '))
    .replace(/\s+/g, ' ')
    .replace(/ ([,.):])/g, '$1');

for (const backend of backends) {
  describe(
    `the app's follow-ups, delegation and quiet hours on ${backend.name}`,
    { skip: backend.skip },
    () => {
      let t: TestService;
      let workspace: Workspace;
      let key: string;
      let admin: Session;
      const { get, follow, post, signIn } = appClient(() => t);

      const config = () => exportConfig(t.service.ctx, workspace);
      const memberOf = async (email: string) => (await config()).members!.find((m) => m.email === email);
      const submit = async (tool: string, agent: string) => {
        const answer = await call(t.url, 'POST', '/api/v1/holds', {
          key,
          body: submission({ tool_name: tool, arguments: { amount: 1200 }, agent_identity: { id: agent } }),
        });
        assert.equal(answer.status, 201, answer.text);
        return answer.body.id as string;
      };
      /** The `delegation.changed` events queued for one member (one clock instant: in no set order). */
      const delegationEvents = async (email: string) =>
        (
          await t.service.ctx.db.all<{ body: string }>(
            `SELECT body FROM webhook_events WHERE workspace_id = $1 AND event = 'delegation.changed'`,
            [workspace.id],
          )
        )
          .map((row) => JSON.parse(row.body).data)
          .filter((data) => data.member === email);

      before(async () => {
        t = await startTestService(backend, {
          clock: new TestClock({ at: T0 }),
          // The webhook's receiver is a loopback address nobody answers on: events are only queued here.
          env: { ALLOW_PRIVATE_TARGETS: 'true' },
        });
        ({ workspace, key } = await t.workspace({ config: WORKSPACE }));
        admin = await signIn(workspace, 'admin@acme.test');
      });
      after(() => t?.close());

      test("a hold's page shows each escalation step and reminder: when, whom it added, whom it asked", async () => {
        const id = await submit('deploy', 'deploy-bot');
        await t.clock.advance(15 * MIN);
        await t.clock.advance(15 * MIN);
        const page = await get(admin, `/app/holds/${id}`);
        assert.equal(page.status, 200);
        const text = textOf(page.text);
        assert.match(text, /Reminders and escalations/);
        assert.match(
          text,
          /Escalated to oncall \(step 1, after 15 min\) at 2026-11-25 10:15 UTC — asked Olga, Oscar/,
        );
        assert.match(text, /Reminded Bob, Olga, Oscar at 2026-11-25 10:30 UTC \(30 min left\)/);
        // Oldest first, each time a <time> the reader's zone is shown in.
        assert.ok(text.indexOf('Escalated to oncall') < text.indexOf('Reminded Bob'));
        assert.match(page.text, /<time datetime="2026-11-25T10:15:00.000Z">/);
        // A hold without follow-ups has no such section.
        const plain = await submit('pay', 'billing-bot');
        assert.doesNotMatch((await get(admin, `/app/holds/${plain}`)).text, /Reminders and escalations/);
      });

      test('a delegate finds the hold in the inbox "for Ann", decides it from its page, and it says so', async () => {
        const dan = await signIn(workspace, 'dan@acme.test');
        const id = await submit('pay', 'billing-bot');
        const inbox = await get(dan, '/app/inbox');
        const line = inbox.text.slice(inbox.text.indexOf(`id="line-${id}"`));
        assert.match(textOf(line.slice(0, line.indexOf('</li>'))), /pay SDK amount=1200 .* for Ann, away/);

        const page = await get(dan, `/app/holds/${id}`);
        const text = textOf(page.text);
        assert.match(text, /You decide for Ann, who is away until 2026-11-25 18:00 UTC\./);
        assert.match(text, /Can still decide: Ann, Dan \(for Ann\)/);
        const decided = await post(dan, `/app/holds/${id}/decide`, {
          verdict: 'approve',
          comment: 'Ann asked me to',
          back: `/app/holds/${id}`,
          next: '',
        });
        assert.equal(decided.status, 303, decided.text.slice(0, 500));
        const after = textOf((await get(admin, `/app/holds/${id}`)).text);
        assert.match(after, /Dan approved for Ann 2026-11-25 \d\d:\d\d UTC via inbox/);
        assert.doesNotMatch(after, /You decide for/);

        // A hold an agent of Dan's asked for: not his to decide, for Ann or himself, and the page says why.
        const own = await submit('pay', 'dan-bot');
        assert.ok(!(await get(dan, '/app/inbox')).text.includes(`id="line-${own}"`));
        assert.match(
          textOf((await get(dan, `/app/holds/${own}`)).text),
          /An agent that acts for you requested this action: someone else must decide it\./,
        );
        // Someone who decides only for themselves sees no such mark.
        assert.doesNotMatch((await get(admin, '/app/inbox')).text, /for Ann/);
      });

      test('a member sets and clears their own time zone, quiet hours and delegation; never another member’s', async () => {
        const bob = await signIn(workspace, 'bob@acme.test');
        const page = await get(bob, '/app/settings');
        assert.equal(page.status, 200);
        assert.match(page.text, /<a href="\/app\/settings"\s+aria-current="page"/);
        assert.match(textOf(page.text), /Dates and times in UTC, your time zone as saved\./);
        const annBefore = await memberOf('ann@acme.test');
        const version = formFields(page.text, '/app/settings').find(([name]) => name === 'config_version')!;
        const away: Fields = {
          config_version: version[1],
          // A field naming another member changes nothing: the page only ever changes the signed-in one.
          email: 'ann@acme.test',
          time_zone: 'Europe/Berlin',
          quiet_from: '20:00',
          quiet_to: '08:00',
          quiet_weekends: 'yes',
          delegate_to: 'dan@acme.test',
          delegate_from: '2026-11-26T09:00',
          delegate_until: '2026-11-28T18:00',
          shown_zone: 'Europe/Berlin',
        };
        const saved = await post(bob, '/app/settings', away);
        assert.equal(saved.status, 303, saved.text.slice(0, 1000));
        assert.equal(saved.location, '/app/settings');
        assert.equal(saved.notice, 'saved');
        assert.deepEqual(await memberOf('bob@acme.test'), {
          email: 'bob@acme.test',
          name: 'Bob',
          role: 'approver',
          channels: ['email'],
          time_zone: 'Europe/Berlin',
          quiet_hours: { from: '20:00', to: '08:00', weekends: true },
          delegate: {
            to: 'dan@acme.test',
            from: '2026-11-26T08:00:00.000Z',
            until: '2026-11-28T17:00:00.000Z',
          },
        });
        assert.deepEqual(await memberOf('ann@acme.test'), annBefore);
        const entry = await lastEvidence(t, workspace);
        assert.equal(entry.type, 'config.applied');
        assert.equal(entry.data.changed_by, 'Bob (bob@acme.test)');
        assert.deepEqual(entry.data.items_changed, ['member:bob@acme.test']);
        assert.deepEqual(entry.data.delegations, [
          {
            member: 'bob@acme.test',
            delegate: 'dan@acme.test',
            from: '2026-11-26T08:00:00.000Z',
            until: '2026-11-28T17:00:00.000Z',
          },
        ]);
        const set = {
          orgId: workspace.id,
          member: 'bob@acme.test',
          delegate: 'dan@acme.test',
          from: '2026-11-26T08:00:00.000Z',
          until: '2026-11-28T17:00:00.000Z',
        };
        assert.deepEqual(await delegationEvents('bob@acme.test'), [set]);
        // Shown back in his zone, as typed.
        const shown = await follow(bob, saved);
        assert.match(shown.text, /Saved\./);
        assert.match(
          textOf(shown.text),
          /You will be away from 2026-11-26 08:00 UTC until 2026-11-28 17:00 UTC: Dan/,
        );
        assert.match(shown.text, /name="delegate_from"\s+type="datetime-local"\s+value="2026-11-26T09:00"/);
        assert.match(shown.text, /<option\s+selected>Europe\/Berlin<\/option>/);
        assert.match(textOf(shown.text), /Dates and times in Europe\/Berlin, your time zone as saved\./);

        // Refused in words, nothing saved, no submitted value in the page but in its own field.
        const current = () => formFields(shown.text, '/app/settings');
        const refused = async (change: Fields, message: RegExp) => {
          const before = await memberOf('bob@acme.test');
          const answer = await post(bob, '/app/settings', { ...Object.fromEntries(current()), ...change });
          assert.equal(answer.status, 422, answer.text.slice(0, 500));
          assert.match(textOf(answer.text), message);
          assert.deepEqual(await memberOf('bob@acme.test'), before);
          return answer;
        };
        const zone = await refused({ time_zone: 'Mars/Olympus<b>' }, /Choose a time zone from the list\./);
        assert.ok(!zone.text.includes('Mars/Olympus'));
        await refused({ delegate_until: '2026-11-26T08:00' }, /Until must be later than From\./);
        await refused({ delegate_until: '2026-11-31T08:00' }, /Until needs a date and time\./);
        await refused({ quiet_to: '' }, /Give both times, or neither for no quiet hours\./);
        await refused(
          { delegate_to: 'vic@acme.test' },
          /The member chosen is a viewer; viewers do not decide/,
        );
        await refused({ delegate_to: 'bob@acme.test' }, /The member chosen must be another member/);

        // Choosing nobody ends the delegation; empty times end the quiet hours.
        const cleared = await post(bob, '/app/settings', {
          ...Object.fromEntries(current()),
          delegate_to: '',
          quiet_from: '',
          quiet_to: '',
          quiet_weekends: [],
        });
        assert.equal(cleared.status, 303, cleared.text.slice(0, 1000));
        assert.deepEqual(await memberOf('bob@acme.test'), {
          email: 'bob@acme.test',
          name: 'Bob',
          role: 'approver',
          channels: ['email'],
          time_zone: 'Europe/Berlin',
        });
        assert.deepEqual((await lastEvidence(t, workspace)).data.delegations, [
          { member: 'bob@acme.test', delegate: null, from: null, until: null },
        ]);
        const ended = {
          orgId: workspace.id,
          member: 'bob@acme.test',
          delegate: null,
          from: null,
          until: null,
        };
        assert.deepEqual(
          (await delegationEvents('bob@acme.test')).filter((data) => data.delegate === null),
          [ended],
        );
        assert.equal((await delegationEvents('bob@acme.test')).length, 2);

        // A page read before someone else changed the same member: refused, saying who and when.
        const stale = await post(bob, '/app/settings', { ...Object.fromEntries(current()), time_zone: '' });
        assert.equal(stale.status, 422);
        assert.match(textOf(stale.text), /Member bob@acme\.test was changed by Bob \(bob@acme\.test\)/);

        // Viewers set their zone and quiet hours, but have no delegation to set; nor admin pages.
        const vic = await signIn(workspace, 'vic@acme.test');
        const viewerPage = await get(vic, '/app/settings');
        assert.doesNotMatch(viewerPage.text, /Out of office/);
        assert.match(viewerPage.text, /<a href="\/app\/settings"/);
        const viewerSaved = await post(vic, '/app/settings', {
          ...Object.fromEntries(formFields(viewerPage.text, '/app/settings')),
          time_zone: 'America/New_York',
          quiet_from: '22:00',
          quiet_to: '07:00',
          delegate_to: 'dan@acme.test',
          delegate_until: '2026-12-01T10:00',
        });
        assert.equal(viewerSaved.status, 303, viewerSaved.text.slice(0, 1000));
        const viewer = await memberOf('vic@acme.test');
        assert.equal(viewer?.time_zone, 'America/New_York');
        assert.deepEqual(viewer?.quiet_hours, { from: '22:00', to: '07:00', weekends: false });
        assert.equal(viewer?.delegate, undefined);
        const edit = await post(bob, '/app/admin/members/ann%40acme.test', {
          name: 'Ann',
          role: 'admin',
          channels: 'email',
        });
        assert.equal(edit.status, 403);
        assert.deepEqual(await memberOf('ann@acme.test'), annBefore);
      });

      test('the admin Members page shows and round-trips Teams, time zone, quiet hours, agents and delegation', async () => {
        const form = await get(admin, '/app/admin/members/olga%40acme.test');
        const fields = Object.fromEntries(formFields(form.text, '/app/admin/members/olga%40acme.test'));
        const missing = await post(admin, '/app/admin/members/olga%40acme.test', {
          ...fields,
          channels: ['email', 'teams'],
        });
        assert.equal(missing.status, 422);
        assert.match(missing.text, /id="m-teams_user_id-error">Teams needs a Teams user id\./);

        const saved = await post(admin, '/app/admin/members/olga%40acme.test', {
          ...fields,
          teams_user_id: '0f8fad5b-d9cb-469f-a165-70867728950e',
          channels: ['email', 'teams'],
          agents: 'olga-bot\nolga-cron\n',
          time_zone: 'America/New_York',
          quiet_from: '22:00',
          quiet_to: '07:00',
          quiet_weekends: 'yes',
          delegate_to: 'oscar@acme.test',
          delegate_from: '2026-11-26T09:00',
          delegate_until: '2026-11-27T17:00',
        });
        assert.equal(saved.status, 303, saved.text.slice(0, 1000));
        const expected = {
          email: 'olga@acme.test',
          name: 'Olga',
          role: 'approver',
          teams_user_id: '0f8fad5b-d9cb-469f-a165-70867728950e',
          channels: ['email', 'teams'],
          time_zone: 'America/New_York',
          quiet_hours: { from: '22:00', to: '07:00', weekends: true },
          agents: ['olga-bot', 'olga-cron'],
          // Typed as her zone was changed to New York: read in New York (issue 39).
          delegate: {
            to: 'oscar@acme.test',
            from: '2026-11-26T14:00:00.000Z',
            until: '2026-11-27T22:00:00.000Z',
          },
        };
        assert.deepEqual(await memberOf('olga@acme.test'), expected);
        const entry = await lastEvidence(t, workspace);
        assert.equal(entry.data.changed_by, 'Ada Admin (admin@acme.test)');
        assert.deepEqual(entry.data.delegations, [
          {
            member: 'olga@acme.test',
            delegate: 'oscar@acme.test',
            from: '2026-11-26T14:00:00.000Z',
            until: '2026-11-27T22:00:00.000Z',
          },
        ]);

        const list = textOf((await get(admin, '/app/admin/members')).text);
        assert.match(list, /Olga olga@acme\.test agents: olga-bot, olga-cron/);
        assert.match(list, /e-mail, Teams Teams 0f8fad5b-d9cb-469f-a165-70867728950e/);
        assert.match(list, /America\/New_York quiet 22:00–07:00 and weekends/);
        assert.match(list, /away from 2026-11-26 14:00 UTC until 2026-11-27 22:00 UTC: Oscar decides/);
        assert.match(list, /away until 2026-11-25 18:00 UTC: Dan decides/);

        // The edit form shows it all again, the delegation in her zone now; sent back as is, nothing changes.
        const again = await get(admin, '/app/admin/members/olga%40acme.test');
        assert.match(again.text, /name="delegate_from"\s+type="datetime-local"\s+value="2026-11-26T09:00"/);
        assert.match(
          again.text,
          /name="teams_user_id"\s+type="text"\s+value="0f8fad5b-d9cb-469f-a165-70867728950e"/,
        );
        const resent = await post(
          admin,
          '/app/admin/members/olga%40acme.test',
          formFields(again.text, '/app/admin/members/olga%40acme.test'),
        );
        assert.equal(resent.status, 303, resent.text.slice(0, 1000));
        assert.deepEqual(await memberOf('olga@acme.test'), expected);
        assert.deepEqual((await lastEvidence(t, workspace)).data.items_changed, []);
      });

      test('an ended delegation stays as it was while its member changes other settings', async () => {
        await t.clock.advance(9 * 60 * MIN);
        const ann = await signIn(workspace, 'ann@acme.test');
        const page = await get(ann, '/app/settings');
        assert.match(textOf(page.text), /Your last delegation, to Dan, ended 2026-11-25 18:00 UTC\./);
        const before = await memberOf('ann@acme.test');
        const saved = await post(ann, '/app/settings', {
          ...Object.fromEntries(formFields(page.text, '/app/settings')),
          quiet_from: '21:00',
          quiet_to: '06:30',
        });
        assert.equal(saved.status, 303, saved.text.slice(0, 1000));
        assert.deepEqual(await memberOf('ann@acme.test'), {
          ...before,
          quiet_hours: { from: '21:00', to: '06:30', weekends: false },
        });
        assert.equal((await lastEvidence(t, workspace)).data.delegations, undefined);
        // A new one must end later than now.
        const past = await post(ann, '/app/settings', {
          ...Object.fromEntries(formFields(page.text, '/app/settings')),
          delegate_until: '2026-11-25T18:30',
        });
        assert.equal(past.status, 422);
        assert.match(textOf(past.text), /Until has passed already: choose a later time\./);
      });

      test('the live inbox counts a hold as new when an escalation asks the reader or a delegation hands it over', async () => {
        const olga = await signIn(workspace, 'olga@acme.test');
        const dan = await signIn(workspace, 'dan@acme.test');
        const changes = async (session: Session, since: number) =>
          JSON.parse((await get(session, `/app/inbox/changes?shown=&since=${since}`)).text) as {
            waiting: number;
            arrived: number;
          };
        const id = await submit('deploy', 'deploy-bot');
        const drawn = t.clock.now();
        const before = await changes(olga, drawn);
        // Fifteen minutes later the escalation step asks the on-call group: new to Olga's open page.
        await t.clock.advance(15 * MIN);
        const escalated = await changes(olga, drawn);
        assert.deepEqual(escalated, { ...before, waiting: before.waiting + 1, arrived: 1, due_sooner: true });
        // Bob, its approver, goes away: the hold is handed to Dan, new to Dan's open page.
        const danDrawn = t.clock.now();
        const danBefore = await changes(dan, danDrawn);
        const file = await config();
        file.members = file.members!.map((member) =>
          member.email === 'bob@acme.test'
            ? {
                ...member,
                delegate: { to: 'dan@acme.test', from: iso(danDrawn), until: iso(danDrawn + 60 * MIN) },
              }
            : member,
        );
        await applyConfig(t.service.ctx, workspace, parseConfig(JSON.stringify(file)));
        await t.clock.advance(1 * MIN);
        assert.deepEqual(await changes(dan, danDrawn), {
          ...danBefore,
          waiting: danBefore.waiting + 1,
          arrived: 1,
          due_sooner: true,
        });
        // Once seen (the page drawn again), it is no longer new.
        assert.equal((await changes(dan, t.clock.now())).arrived, 0);
        assert.ok((await get(dan, '/app/inbox')).text.includes(`id="line-${id}"`));
      });

      test('a delegation from now, saved again unchanged, stays the same delegation', async () => {
        // A moment with milliseconds: the page shows it to the second.
        await t.clock.advance(1_234, { runWorkers: false });
        const oscar = await signIn(workspace, 'oscar@acme.test');
        const page = await get(oscar, '/app/settings');
        const fields = Object.fromEntries(formFields(page.text, '/app/settings'));
        const until = new Date(t.clock.now() + 60 * MIN).toISOString().slice(0, 16);
        const set = await post(oscar, '/app/settings', {
          ...fields,
          delegate_to: 'olga@acme.test',
          delegate_from: '',
          delegate_until: until,
        });
        assert.equal(set.status, 303, set.text.slice(0, 1000));
        assert.equal((await lastEvidence(t, workspace)).data.delegations.length, 1);
        const again = await get(oscar, '/app/settings');
        const resaved = await post(
          oscar,
          '/app/settings',
          Object.fromEntries(formFields(again.text, '/app/settings')),
        );
        assert.equal(resaved.status, 303, resaved.text.slice(0, 1000));
        assert.equal((await lastEvidence(t, workspace)).data.delegations, undefined);
      });

      test('every member of a workspace file, saved unchanged through the admin form, stays as it was', async () => {
        // Whole minutes from now: the form shows times to the second.
        const at = (minutes: number) => iso((Math.floor(t.clock.now() / MIN) + minutes) * MIN);
        const { workspace: full } = await t.workspace({
          config: `
members:
  - email: Max@acme.test
    name: Max Mustermann
    role: admin
    phone: '+15550100'
    slack_user_id: U0MAX
    teams_user_id: 0f8fad5b-d9cb-469f-a165-70867728950e
    channels: [email, sms, slack, teams]
    time_zone: Asia/Calcutta
    quiet_hours: { from: '20:00', to: '07:30', weekends: true }
    agents: [max-bot, max-cron]
    delegate: { to: eve@acme.test, from: '${at(-60)}', until: '${at(600)}' }
  - email: eve@acme.test
    name: Eve
    role: approver
    channels: [sms]
    phone: '+15550101'
    quiet_hours: { from: '22:00', to: '06:00' }
    delegate: { to: Max@acme.test, from: '${at(-600)}', until: '${at(-60)}' }
  - email: fay@acme.test
    name: Fay
    role: approver
    time_zone: America/New_York
    delegate: { to: eve@acme.test, from: '${at(24 * 60)}', until: '${at(48 * 60)}' }
  - { email: gus@acme.test, name: Gus, role: viewer, channels: [] }
groups: { team: [eve@acme.test, fay@acme.test] }
`,
        });
        const before = await exportConfig(t.service.ctx, full);
        const max = await signIn(full, 'Max@acme.test');
        for (const member of before.members!) {
          const path = `/app/admin/members/${encodeURIComponent(member.email)}`;
          const form = await get(max, path);
          assert.equal(form.status, 200, member.email);
          const saved = await post(max, path, formFields(form.text, path));
          assert.equal(
            saved.status,
            303,
            `${member.email}: ${saved.text.match(/error"[^]*?<\/(p|ul)>/)?.[0]}`,
          );
        }
        assert.deepEqual(await exportConfig(t.service.ctx, full), before);
      });
    },
  );
}
