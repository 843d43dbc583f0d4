/**
 * Reminders, escalation steps and delegates' decisions in the reports, on each storage backend: the
 * deadline worker (run as the test clock moves) escalates and reminds one hold, a delegate decides
 * another in a member's place; the oversight report counts both, the activity report shows each per
 * hold, in the CSV (new columns at the end) and in the PDF (through pdftotext).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends } from './support/backends.ts';
import { parseCsv } from './support/csv.ts';
import { call } from './support/http.ts';
import { decideAs, startTestService, TestClock, type TestService } from './support/service.ts';

const run = promisify(execFile);
const pdftotextSkip = await run('pdftotext', ['-v'])
  .then(() => undefined)
  .catch(() => 'pdftotext not found (apt-get install poppler-utils): PDF checks skipped');

const MIN = 60_000;
const T0 = Date.parse('2026-06-01T00:00:00.000Z');
const PERIOD = 'from=2026-06-01&to=2026-06-02';

const POLICY = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - email: ann@acme.test
    name: Ann
    role: approver
    delegate: { to: dan@acme.test, from: '2026-05-31T00:00:00Z', until: '2026-06-02T00:00:00Z' }
  - { email: dan@acme.test, name: Dan, role: approver }
  - { email: olga@acme.test, name: Olga, role: approver }
groups: { oncall: [olga@acme.test] }
tools:
  - { connection: SDK, tool: deploy, classification: approval }
  - { connection: SDK, tool: pay, classification: approval }
rules:
  - name: Deploys
    tool: deploy
    effect: approval
    approvers: [ann@acme.test]
    timeout_minutes: 120
    remind: [30m, 5m]
    escalate: [{ after: 15m, to: [group:oncall] }, { after: 45m, to: [role:admin] }]
  - { name: Payments, tool: pay, effect: approval, approvers: [ann@acme.test], timeout_minutes: 60 }
`;

for (const backend of backends) {
  describe(`reports of follow-ups and delegates on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let workspace: Workspace;
    let key: string;
    let deploy: string;
    let pay: string;

    before(async () => {
      t = await startTestService(backend, { clock: new TestClock({ at: T0 }) });
      ({ workspace, key } = await t.workspace({ config: POLICY }));
      const submit = async (tool: string) => {
        const body = { tool_name: tool, agent_identity: { id: 'bot' }, idempotency_key: tool };
        const answer = await call(t.url, 'POST', '/api/v1/holds', { key, body });
        assert.equal(answer.status, 201, answer.text);
        return answer.body.id as string;
      };
      const at = (minutes: number) => t.clock.advanceTo(T0 + minutes * MIN);
      deploy = await submit('deploy');
      await t.clock.advance(1000);
      pay = await submit('pay');
      // Ann is away: Dan decides the payment in her place.
      await at(10);
      assert.equal((await decideAs(t, workspace.id, pay, 'approve', 'dan@acme.test')).outcome, 'recorded');
      // The deploy escalates twice, is reminded 30 minutes before its deadline, then Olga approves.
      await at(15);
      await at(45);
      await at(90);
      await at(100);
      assert.equal(
        (await decideAs(t, workspace.id, deploy, 'approve', 'olga@acme.test')).outcome,
        'recorded',
      );
    });
    after(() => t.close());

    test('oversight CSV: reminders, escalations and delegated decisions counted', async () => {
      const answer = await call(t.url, 'GET', `/api/v1/reports/oversight?${PERIOD}`, { key });
      assert.equal(answer.status, 200);
      const rows = parseCsv(answer.text);
      const figure = (section: string, subject: string, metric: string) =>
        rows.find((row) => row.join('|').startsWith(`${section}|${subject}|${metric}|`))?.[3];
      assert.equal(figure('totals', '', 'holds'), '2');
      assert.equal(figure('totals', '', 'reminders'), '1');
      assert.equal(figure('totals', '', 'escalations'), '2');
      assert.equal(figure('totals', '', 'holds_escalated'), '1');
      assert.equal(figure('totals', '', 'delegated_decisions'), '1');
      assert.equal(figure('approver', 'dan@acme.test', 'as_delegate'), '1');
      assert.equal(figure('approver', 'olga@acme.test', 'as_delegate'), '0');
      // A filter narrows them as every other figure.
      const payOnly = parseCsv(
        (await call(t.url, 'GET', `/api/v1/reports/oversight?${PERIOD}&tool=pay`, { key })).text,
      );
      const totals = payOnly.filter((row) => row[0] === 'totals').map((row) => `${row[2]}=${row[3]}`);
      assert.deepEqual(totals, [
        'holds=1',
        'reminders=0',
        'escalations=0',
        'holds_escalated=0',
        'delegated_decisions=1',
      ]);
    });

    test('activity CSV: the old columns as they were, the new ones at the end', async () => {
      const answer = await call(t.url, 'GET', `/api/v1/reports/activity?${PERIOD}`, { key });
      const [header, ...rows] = parseCsv(answer.text);
      // The whole header is checked in reports.test.ts: here, the new columns come last.
      assert.deepEqual(header!.slice(-5), [
        'execution_status',
        'reminders',
        'escalations',
        'escalated_to',
        'on_behalf_of',
      ]);
      assert.deepEqual(rows, [
        [
          deploy,
          '2026-06-01T00:00:00.000Z',
          'SDK',
          'deploy',
          'bot',
          'live',
          'approved',
          'approve',
          'inbox',
          'Olga',
          '2026-06-01T01:40:00.000Z',
          '',
          '1',
          '2',
          'group:oncall after 15 min; role:admin after 45 min',
          '',
        ],
        [
          pay,
          '2026-06-01T00:00:01.000Z',
          'SDK',
          'pay',
          'bot',
          'live',
          'approved',
          'approve',
          'inbox',
          'Dan',
          '2026-06-01T00:10:00.000Z',
          '',
          '0',
          '0',
          '',
          'Dan for Ann',
        ],
      ]);
    });

    test(
      'PDFs: the summary counts, the delegate per approver, each hold’s follow-ups',
      { skip: pdftotextSkip },
      async () => {
        const text = async (path: string, mode: string) => {
          const response = await fetch(`${t.url}/api/v1/reports/${path}?${PERIOD}&format=pdf`, {
            headers: { authorization: `Bearer ${key}` },
          });
          assert.equal(response.status, 200);
          const file = join(t.storage.env.DATA_DIR, `report-${Math.random()}.pdf`);
          writeFileSync(file, Buffer.from(await response.arrayBuffer()));
          return (await run('pdftotext', [mode, file, '-'])).stdout;
        };
        const oversight = await text('oversight', '-layout');
        assert.match(oversight, /Reminders sent\s+1\b/);
        assert.match(oversight, /Holds escalated\s+1 \(2 steps\)/);
        assert.match(oversight, /Decisions by delegates\s+1\b/);
        assert.match(oversight, /Decisions\s+Approvals\s+Rejections\s+As delegate\s+Mean time/);
        assert.match(oversight, /Dan\s+dan@acme\.test\s+1\s+1\s+0\s+1\s+10\.0 min/);
        assert.match(oversight, /Olga\s+olga@acme\.test\s+1\s+1\s+0\s+0\s+1\.7 h/);
        // A wrapped cell reads back line after line; its words, joined, are the cell.
        const activity = (await text('activity', '-raw')).replace(/\s+/g, ' ');
        assert.match(activity, /Reminders, escalation/);
        assert.ok(
          activity.includes(
            'Olga 2026-06-01 01:40:00 — 1 reminder; escalated: group:oncall after 15 min; role:admin after 45 min',
          ),
          activity,
        );
        assert.ok(activity.includes('approve / inbox Dan for Ann 2026-06-01 00:10:00 — —'), activity);
      },
    );
  });
}
