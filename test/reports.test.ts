/**
 * The oversight and activity reports over a known set of holds, on each storage backend: every figure
 * checked in the CSV and, through pdftotext, in the PDF; filters, formula neutralization, page breaks
 * with repeated headers, bad parameters, the rate-limit bucket, and the app's downloads.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { inflateSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { call } from './support/http.ts';
import { decideAs, startTestService, TestClock, type TestService } from './support/service.ts';
import { parseCsv } from './support/csv.ts';

const run = promisify(execFile);
const pdftotextSkip = await run('pdftotext', ['-v'])
  .then(() => undefined)
  .catch(() => 'pdftotext not found (apt-get install poppler-utils): PDF checks skipped');

const T0 = Date.parse('2026-06-01T00:00:00.000Z');

/** A clock that stands still unless moved, so every duration in the reports is exact. */
class StillClock extends TestClock {
  constructor() {
    super({ at: T0 });
  }
  /** Moves to `seconds` after the start of the period (back, too); the workers run at that time. */
  to(seconds: number) {
    return this.advance(T0 + seconds * 1000 - this.now());
  }
}

const PERIOD = 'from=2026-06-01&to=2026-06-02';

const POLICY = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: bob@acme.test, name: Bob, role: approver }
  - { email: vic@acme.test, name: Vic, role: viewer }
tools:
  - { connection: SDK, tool: read_balance, classification: allow }
  - { connection: SDK, tool: delete_account, classification: deny }
  - { connection: SDK, tool: send_invoice, classification: approval }
  - { connection: SDK, tool: wire_money, classification: approval }
rules:
  - name: Invoices
    tool: send_invoice
    effect: approval
    approvers: [admin@acme.test]
    timeout_minutes: 60
  - name: Wires need two
    tool: wire_money
    effect: approval
    approvers: [admin@acme.test, bob@acme.test]
    approvals_required: 2
    timeout_minutes: 30
`;

/** The oversight CSV as a lookup: `figure('tool', 'SDK/send_invoice', 'holds')`. */
function figuresOf(csv: string) {
  const [header, ...rows] = parseCsv(csv);
  assert.deepEqual(header, ['section', 'subject', 'metric', 'value']);
  const map = new Map(
    rows.map(([section, subject, metric, value]) => [`${section}|${subject}|${metric}`, value]),
  );
  return (section: string, subject: string, metric: string) => {
    const key = `${section}|${subject}|${metric}`;
    assert.ok(map.has(key), `the CSV has ${key}`);
    return map.get(key);
  };
}

/** The PDF's text, laid out as on the page, or (`raw`) in the order it was written, cell after cell. */
async function pdfText(t: TestService, path: string, key: string, mode = '-layout'): Promise<string> {
  const response = await fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('content-type'), 'application/pdf');
  const bytes = Buffer.from(await response.arrayBuffer());
  assert.equal(bytes.subarray(0, 5).toString(), '%PDF-');
  const file = join(t.storage.env.DATA_DIR, `report-${Math.random()}.pdf`);
  writeFileSync(file, bytes);
  return (await run('pdftotext', [mode, file, '-'])).stdout;
}

for (const backend of backends) {
  describe(`reports on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let clock: StillClock;
    let workspace: Workspace;
    let key: string;
    const ids: Record<string, string> = {};
    let headHash: string;

    before(async () => {
      clock = new StillClock();
      t = await startTestService(backend, { clock });
      ({ workspace, key } = await t.workspace({ config: POLICY }));
      const submit = async (name: string, tool: string, agent = 'bot', at?: number) => {
        if (at !== undefined) await clock.to(at);
        const answer = await call(t.url, 'POST', '/api/v1/holds', {
          key,
          body: {
            tool_name: tool,
            agent_identity: { id: agent },
            idempotency_key: name,
            arguments: { n: 1 },
          },
        });
        assert.equal(answer.status, 201);
        ids[name] = answer.body.id;
      };
      const decide = async (
        at: number,
        name: string,
        verdict: 'approve' | 'reject',
        email: string,
        channel: 'inbox' | 'email' | 'sms' | 'slack',
      ) => {
        await clock.to(at);
        await decideAs(t, workspace.id, ids[name]!, verdict, email, null, channel);
      };
      // One the day before: outside the period.
      await submit('before', 'read_balance', 'bot', -86_400);
      await submit('R1', 'read_balance', 'bot', 0);
      await submit('R2', 'read_balance', 'bot', 1);
      await submit('R3', 'read_balance', 'bot', 2);
      await submit('D1', 'delete_account', 'bot', 3);
      await submit('D2', 'delete_account', 'bot', 4);
      await submit('A', 'send_invoice', 'bot', 5);
      await submit('B', 'send_invoice', 'bot', 6);
      await submit('C', 'send_invoice', 'bot', 7);
      await submit('W1', 'wire_money', 'treasury', 8);
      await submit('W2', 'wire_money', 'treasury', 9);
      // A tool never classified, by an agent whose id a spreadsheet would run as a formula.
      await submit('N', '-rm', '=HYPERLINK("http://evil.test")', 10);
      await decide(68, 'W1', 'approve', 'admin@acme.test', 'inbox');
      await decide(125, 'A', 'approve', 'admin@acme.test', 'inbox');
      await decide(188, 'W1', 'approve', 'bob@acme.test', 'slack');
      await decide(309, 'W2', 'approve', 'admin@acme.test', 'email');
      await decide(606, 'B', 'reject', 'admin@acme.test', 'slack');
      await decide(1209, 'W2', 'reject', 'bob@acme.test', 'sms');
      // C passes its 60-minute deadline; the sweep that moving the clock runs expires it.
      await clock.to(3700);
      // Read from storage: the clock stands still, so API calls would all count in one rate-limit window.
      const c = await t.service.ctx.db.one<{ status: string }>('SELECT status FROM holds WHERE id = $1', [
        ids.C,
      ]);
      assert.equal(c?.status, 'expired');
      headHash = (await call(t.url, 'GET', '/api/v1/audit/verify', { key })).body.head.hash;
    });
    after(() => t.close());

    test('oversight CSV: every figure of the seeded period', async () => {
      const answer = await call(t.url, 'GET', `/api/v1/reports/oversight?${PERIOD}`, { key });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers.get('content-type'), 'text/csv; charset=utf-8');
      assert.match(answer.headers.get('content-disposition')!, /^attachment; filename="oversight-.+\.csv"$/);
      const figure = figuresOf(answer.text);
      assert.equal(figure('report', '', 'from'), '2026-06-01T00:00:00.000Z');
      assert.equal(figure('report', '', 'to'), '2026-06-02T00:00:00.000Z');
      assert.equal(figure('evidence', '', 'head_hash'), headHash);
      assert.equal(figure('totals', '', 'holds'), '11');
      const outcomes = {
        auto_allowed: 3,
        pending: 1,
        approved: 2,
        rejected: 4,
        expired: 1,
        executed: 0,
        failed: 0,
      };
      for (const [status, n] of Object.entries(outcomes))
        assert.equal(figure('outcome', '', status), String(n));
      assert.equal(figure('decided_by', '', 'rule'), '5');
      assert.equal(figure('decided_by', '', 'people'), '4');
      assert.equal(figure('decided_by', '', 'undecided'), '2');
      assert.equal(figure('decided_by', '', 'share_rule'), '0.4545');
      assert.equal(figure('decided_by', '', 'share_people'), '0.3636');
      for (const [channel, n] of Object.entries({ inbox: 2, slack: 2, email: 1, sms: 1 })) {
        assert.equal(figure('channel', channel, 'decisions'), String(n));
      }
      // Human decisions took 120 s (A), 180 s (W1), 600 s (B) and 1200 s (W2): nearest-rank percentiles.
      assert.equal(figure('time_to_decision', '', 'decided'), '4');
      assert.equal(figure('time_to_decision', '', 'median_seconds'), '180');
      assert.equal(figure('time_to_decision', '', 'p95_seconds'), '1200');
      const buckets = {
        'under 1 min': 0,
        '1–5 min': 2,
        '5–15 min': 1,
        '15–60 min': 1,
        '1–4 h': 0,
        'over 4 h': 0,
      };
      for (const [bucket, n] of Object.entries(buckets)) {
        assert.equal(figure('time_to_decision', bucket, 'holds'), String(n));
      }
      assert.equal(figure('expiry', '', 'waited'), '6');
      assert.equal(figure('expiry', '', 'finished'), '5');
      assert.equal(figure('expiry', '', 'expired'), '1');
      assert.equal(figure('expiry', '', 'rate'), '0.2000');
      for (const [metric, n] of Object.entries({ holds: 2, approved: 1, rejected: 1, expired: 0 })) {
        assert.equal(figure('four_eyes', '', metric), String(n));
      }
      const tools = {
        'SDK/read_balance': {
          holds: 3,
          allowed: 3,
          denied: 0,
          approved: 0,
          rejected: 0,
          expired: 0,
          pending: 0,
        },
        'SDK/delete_account': {
          holds: 2,
          allowed: 0,
          denied: 2,
          approved: 0,
          rejected: 0,
          expired: 0,
          pending: 0,
        },
        'SDK/send_invoice': {
          holds: 3,
          allowed: 0,
          denied: 0,
          approved: 1,
          rejected: 1,
          expired: 1,
          pending: 0,
        },
        'SDK/wire_money': {
          holds: 2,
          allowed: 0,
          denied: 0,
          approved: 1,
          rejected: 1,
          expired: 0,
          pending: 0,
        },
        'SDK/-rm': { holds: 1, allowed: 0, denied: 0, approved: 0, rejected: 0, expired: 0, pending: 1 },
      };
      for (const [tool, metrics] of Object.entries(tools)) {
        for (const [metric, n] of Object.entries(metrics))
          assert.equal(figure('tool', tool, metric), String(n));
      }
      // Admin: W1 60 s, A 120 s, W2 300 s, B 600 s; Bob: W1 180 s, W2 1200 s.
      const approvers = {
        'admin@acme.test': {
          name: 'Admin',
          decisions: '4',
          approvals: '3',
          rejections: '1',
          mean_seconds: '270',
          as_delegate: '0',
        },
        'bob@acme.test': {
          name: 'Bob',
          decisions: '2',
          approvals: '1',
          rejections: '1',
          mean_seconds: '690',
          as_delegate: '0',
        },
      };
      for (const [email, metrics] of Object.entries(approvers)) {
        for (const [metric, value] of Object.entries(metrics))
          assert.equal(figure('approver', email, metric), value);
      }
      assert.equal(figure('unclassified', 'SDK/-rm', 'holds'), '1');
      assert.equal(figure('unclassified', 'SDK/-rm', 'first_seen_at'), '2026-06-01T00:00:10.000Z');
    });

    test('activity CSV: one row per hold in order, approvers by name, formulas neutralized', async () => {
      const answer = await call(t.url, 'GET', `/api/v1/reports/activity?${PERIOD}`, { key });
      assert.equal(answer.status, 200);
      const [header, ...rows] = parseCsv(answer.text);
      assert.deepEqual(header, [
        'reference',
        'created_at',
        'connection',
        'tool_name',
        'agent_id',
        'environment',
        'status',
        'verdict',
        'channel',
        'approvers',
        'decided_at',
        'execution_status',
        'reminders',
        'escalations',
        'escalated_to',
        'on_behalf_of',
      ]);
      const order = ['R1', 'R2', 'R3', 'D1', 'D2', 'A', 'B', 'C', 'W1', 'W2', 'N'];
      assert.deepEqual(
        rows.map((row) => row[0]),
        order.map((name) => ids[name]),
      );
      const row = (name: string) => rows.find((r) => r[0] === ids[name])!;
      assert.deepEqual(row('W2'), [
        ids.W2,
        '2026-06-01T00:00:09.000Z',
        'SDK',
        'wire_money',
        'treasury',
        'live',
        'rejected',
        'reject',
        'sms',
        'Admin; Bob',
        '2026-06-01T00:20:09.000Z',
        '',
        '0',
        '0',
        '',
        '',
      ]);
      assert.deepEqual(row('D1').slice(6, 10), ['rejected', 'reject', 'rule', '']);
      assert.deepEqual(row('C').slice(6, 11), ['expired', '', '', '', '']);
      assert.equal(row('N')[3], "'-rm");
      assert.equal(row('N')[4], `'=HYPERLINK("http://evil.test")`);
      assert.ok(!answer.text.includes(',=HYPERLINK'), 'no cell starts with =');
      assert.ok(!answer.text.includes('"n":1'), 'no argument values');
    });

    test('activity CSV: a formula behind blanks, separators, quotes, full-width signs or a line break is neutralized', async () => {
      const { key: hostileKey } = await t.workspace({ config: POLICY });
      const hostile = [
        ';=1+1',
        ' =1+1',
        '＝1+1',
        '\t@SUM(1)',
        '"+1',
        "',-1",
        '\u3000－1',
        '＋1',
        '＠SUM(1)',
        'bot\n=1+1',
        'bot\r\n ＠cmd',
      ];
      const harmless = ['a=1', 'bot-1', 'bot\nnext', 'x;y'];
      for (const [index, agent] of [...hostile, ...harmless].entries()) {
        await clock.to(5000 + index);
        const body = {
          tool_name: 'read_balance',
          agent_identity: { id: agent },
          idempotency_key: `f-${index}`,
        };
        assert.equal((await call(t.url, 'POST', '/api/v1/holds', { key: hostileKey, body })).status, 201);
      }
      const answer = await call(t.url, 'GET', `/api/v1/reports/activity?${PERIOD}`, { key: hostileKey });
      const [header, ...rows] = parseCsv(answer.text);
      const agents = rows.map((row) => row[header!.indexOf('agent_id')]);
      assert.deepEqual(agents, [...hostile.map((agent) => `'${agent}`), ...harmless]);
    });

    test("a report shows only its own workspace's holds, whatever the filter", async () => {
      const other = await t.workspace({ config: POLICY });
      const theirs = await call(t.url, 'POST', '/api/v1/holds', {
        key: other.key,
        body: { tool_name: 'wire_money', agent_identity: { id: 'treasury' }, idempotency_key: 'other-1' },
      });
      assert.equal(theirs.status, 201);
      for (const path of ['activity', 'oversight']) {
        const mine = await call(t.url, 'GET', `/api/v1/reports/${path}?${PERIOD}&agent=treasury`, { key });
        assert.equal(mine.status, 200);
        assert.ok(!mine.text.includes(theirs.body.id), `${path}: their hold in my report`);
        const yours = await call(t.url, 'GET', `/api/v1/reports/${path}?${PERIOD}`, { key: other.key });
        for (const id of Object.values(ids))
          assert.ok(!yours.text.includes(id), `${path}: my hold in theirs`);
      }
      const theirActivity = parseCsv(
        (await call(t.url, 'GET', `/api/v1/reports/activity?${PERIOD}`, { key: other.key })).text,
      );
      for (const row of theirActivity.slice(1)) assert.equal(row[0], theirs.body.id, 'only their own holds');
    });

    test('filters: a tool, an agent; the period excludes the day before', async () => {
      const byTool = figuresOf(
        (await call(t.url, 'GET', `/api/v1/reports/oversight?${PERIOD}&tool=send_invoice`, { key })).text,
      );
      assert.equal(byTool('totals', '', 'holds'), '3');
      assert.equal(byTool('report', '', 'tool'), 'send_invoice');
      const byAgent = parseCsv(
        (await call(t.url, 'GET', `/api/v1/reports/activity?${PERIOD}&agent=treasury`, { key })).text,
      );
      assert.deepEqual(
        byAgent.slice(1).map((row) => row[0]),
        [ids.W1, ids.W2],
      );
      const dayBefore = figuresOf(
        (await call(t.url, 'GET', '/api/v1/reports/oversight?from=2026-05-31&to=2026-06-01', { key })).text,
      );
      assert.equal(dayBefore('totals', '', 'holds'), '1');
      // Without a period: the 30 days up to now.
      const recent = figuresOf((await call(t.url, 'GET', '/api/v1/reports/oversight', { key })).text);
      assert.equal(recent('totals', '', 'holds'), '12');
    });

    test(
      'oversight PDF: the same figures, charts, tables and the chain head',
      { skip: pdftotextSkip },
      async () => {
        const text = await pdfText(t, `/api/v1/reports/oversight?${PERIOD}&format=pdf`, key);
        const line = (pattern: RegExp) => assert.match(text, pattern);
        line(/Acme/);
        line(/Oversight report/);
        line(/2026-06-01 00:00:00 to 2026-06-02 00:00:00 UTC/);
        line(/Holds\s+11\b/);
        line(/Decided by rule\s+5 \(45\.5 %\)/);
        line(/Decided by people\s+4 \(36\.4 %\)/);
        line(/Undecided \(pending, expired\)\s+2\b/);
        line(/Median time to decision\s+3\.0 min/);
        line(/95th percentile\s+20\.0 min/);
        line(/Expiry rate\s+20\.0 %/);
        line(/Four-eyes holds\s+2\b/);
        // The outcome bars carry their counts; the histogram its bucket counts.
        line(/auto allowed\s+3/);
        line(/rejected\s+4/);
        line(/Time to a human decision \(4 holds\)/);
        line(/under 1 min\s+1–5 min\s+5–15 min\s+15–60 min\s+1–4 h\s+over 4 h/);
        line(/\n\s*6\s+5\s+1\s+20\.0 %/);
        line(/inbox\s+2\n/);
        line(/sms\s+1\n/);
        line(/SDK\s+send_invoice\s+3\s+0\s+0\s+1\s+1\s+1\s+0/);
        line(/SDK\s+wire_money\s+2\s+0\s+0\s+1\s+1\s+0\s+0/);
        line(/Admin\s+admin@acme\.test\s+4\s+3\s+1\s+0\s+4\.5 min/);
        line(/Bob\s+bob@acme\.test\s+2\s+1\s+1\s+0\s+11\.5 min/);
        line(/SDK\s+-rm\s+2026-06-01 00:00:10\s+1/);
        line(new RegExp(`head hash\\s+${headHash}`));
        line(/Page 1/);
      },
    );

    test(
      'activity PDF: long tables break across pages with the header repeated',
      { skip: pdftotextSkip },
      async () => {
        const { key: busyKey } = await t.workspace({ config: POLICY });
        await clock.to(4000);
        for (let i = 0; i < 90; i++) {
          const body = {
            tool_name: 'read_balance',
            agent_identity: { id: `bot-${i}` },
            idempotency_key: `busy-${i}`,
          };
          assert.equal((await call(t.url, 'POST', '/api/v1/holds', { key: busyKey, body })).status, 201);
        }
        const text = await pdfText(t, `/api/v1/reports/activity?${PERIOD}&format=pdf`, busyKey);
        const pages = text.split('\f').filter((page) => page.trim() !== '');
        assert.ok(pages.length >= 3, `several pages (${pages.length})`);
        for (const [index, page] of pages.entries()) {
          // The last page may hold only the evidence section; every page with rows starts with the header.
          if (page.includes('svc_pa_')) {
            assert.match(
              page,
              /Reference\s+Created \(UTC\)\s+Connection \/ tool/,
              `header on page ${index + 1}`,
            );
          }
          assert.match(page, new RegExp(`Page ${index + 1}\\b`));
        }
        for (let i = 0; i < 90; i++) assert.match(text, new RegExp(`\\bbot-${i}\\b`));
        const seeded = await pdfText(t, `/api/v1/reports/activity?${PERIOD}&format=pdf`, key);
        assert.match(seeded, new RegExp(`${ids.W2}.+wire_money.+treasury.+reject / sms\\s+Admin, Bob`));
        assert.match(seeded, /'?=HYPERLINK/);
      },
    );

    test(
      'a tool name is never cut in a PDF: long names, connections and agents wrap in their cells',
      { skip: pdftotextSkip },
      async () => {
        const { key: namesKey } = await t.workspace({ config: POLICY });
        await clock.to(5000);
        const long = `crm.${'very_long_segment_'.repeat(6)}end`;
        const agent = 'release-manager-agent-for-the-platform-team';
        for (const [i, tool] of ['github.merge_pull_request', long].entries()) {
          const body = { tool_name: tool, agent_identity: { id: agent }, idempotency_key: `names-${i}` };
          assert.equal((await call(t.url, 'POST', '/api/v1/holds', { key: namesKey, body })).status, 201);
        }
        for (const path of ['activity', 'oversight']) {
          const text = await pdfText(t, `/api/v1/reports/${path}?${PERIOD}&format=pdf`, namesKey, '-raw');
          // A cell wrapped onto several lines reads back as consecutive lines.
          const joined = text.replaceAll('\n', '');
          assert.ok(joined.includes('github.merge_pull_request'), `${path}: ${text}`);
          assert.ok(joined.includes(long), `${path}: ${text}`);
          if (path === 'activity') assert.ok(joined.includes(agent), text);
          assert.doesNotMatch(text, /SDK \/…/);
        }
      },
    );

    test(
      'activity PDF: accents, quotes and PDF string syntax read back as written; every stream inflates',
      { skip: pdftotextSkip },
      async () => {
        // Each value fits its column, so it reads back on one line. An unbalanced parenthesis or a
        // backslash would end or change a PDF string that did not escape it.
        const approver = 'Zoë Œ) \\ “Ops”';
        const agent = 'bot-é (x \\ €';
        const { workspace: accents, key: accentsKey } = await t.workspace({
          config: POLICY.replace('name: Admin,', `name: "${approver.replaceAll('\\', '\\\\')}",`),
        });
        await clock.to(6000);
        const body = { tool_name: 'send_invoice', agent_identity: { id: agent }, idempotency_key: 'accents' };
        const held = await call(t.url, 'POST', '/api/v1/holds', { key: accentsKey, body });
        assert.equal(held.status, 201);
        await decideAs(t, accents.id, held.body.id, 'approve', 'admin@acme.test');
        const response = await fetch(`${t.url}/api/v1/reports/activity?${PERIOD}&format=pdf`, {
          headers: { authorization: `Bearer ${accentsKey}` },
        });
        const bytes = Buffer.from(await response.arrayBuffer());
        const file = join(t.storage.env.DATA_DIR, `report-${Math.random()}.pdf`);
        writeFileSync(file, bytes);
        const text = (await run('pdftotext', ['-raw', file, '-'])).stdout;
        // Each cell whole, and the next one after it: nothing of the syntax around a string shows.
        assert.ok(text.includes(` ${agent} live approved approve / inbox ${approver} 2026-06-01 `), text);
        // Every compressed stream is a whole zlib stream: inflateSync checks its end and checksum.
        const pdf = bytes.toString('latin1');
        let streams = 0;
        for (const match of pdf.matchAll(/<<([^<>]*)>>\nstream\n/g)) {
          if (!match[1]!.includes('/FlateDecode')) continue;
          const length = Number(/\/Length (\d+)/.exec(match[1]!)![1]);
          const start = match.index + match[0].length;
          assert.doesNotThrow(() => inflateSync(bytes.subarray(start, start + length)), `stream ${streams}`);
          streams += 1;
        }
        assert.ok(streams > 0, 'compressed streams');
      },
    );

    test('format from Accept; bad parameters are 422 without echo; own rate-limit bucket', async () => {
      const pdf = await fetch(`${t.url}/api/v1/reports/activity?${PERIOD}`, {
        headers: { authorization: `Bearer ${key}`, accept: 'application/pdf' },
      });
      assert.equal(pdf.headers.get('content-type'), 'application/pdf');
      assert.equal(
        Buffer.from(await pdf.arrayBuffer())
          .subarray(0, 5)
          .toString(),
        '%PDF-',
      );
      const refused: [string, string][] = [
        ['from=yesterday', 'from'],
        ['from=2026-13-45', 'from'],
        ['to=2026-06-01T00:00:00', 'to'],
        ['from=2026-06-02&to=2026-06-01', 'to'],
        ['format=xlsx', 'format'],
        ['tool=', 'tool'],
        [`agent=${'x'.repeat(201)}`, 'agent'],
      ];
      for (const [query, field] of refused) {
        const answer = await call(t.url, 'GET', `/api/v1/reports/oversight?${query}`, { key });
        assert.equal(answer.status, 422, query);
        assert.equal(answer.body.error, 'validation_failed');
        assert.equal(answer.body.issues[0].field, field, query);
        assert.ok(!answer.text.includes(query.split('=')[1]!) || query.endsWith('='), `no echo of ${query}`);
      }
      // A filter no hold has: an empty report that does not repeat the made-up value.
      const made = 'zq9-made-up-tool';
      const filtered = `/api/v1/reports/oversight?${PERIOD}&tool=${made}&agent=${made}`;
      const texts = [(await call(t.url, 'GET', filtered, { key })).text];
      if (!pdftotextSkip) texts.push(await pdfText(t, `${filtered}&format=pdf`, key));
      for (const text of texts) {
        assert.ok(!text.includes(made), 'the filter value is repeated');
        assert.match(text, /no hold has it/);
      }
      assert.equal((await call(t.url, 'GET', '/api/v1/reports/oversight')).status, 401);
      const { key: freshKey } = await t.workspace({ config: POLICY });
      const first = await call(t.url, 'GET', '/api/v1/reports/oversight', { key: freshKey });
      assert.equal(first.headers.get('ratelimit-remaining'), '119');
      const hold = await call(t.url, 'GET', `/api/v1/holds/${ids.A}`, { key: freshKey });
      assert.equal(hold.status, 404, 'another workspace’s hold is unknown');
      assert.equal(hold.headers.get('ratelimit-remaining'), '119', 'v1 counts apart from v1-reports');
    });

    test('the app: a Reports page for every member, the same files, errors shown in the page', async () => {
      const app = appClient(t);
      const viewer = await app.signIn(workspace, 'vic@acme.test');
      const page = await app.get(viewer, '/app/reports');
      assert.equal(page.status, 200);
      assert.match(page.text, /formaction="\/app\/reports\/activity"/);
      const fromApp = await app.get(viewer, `/app/reports/oversight?${PERIOD}&tool=&agent=&format=csv`);
      const fromApi = await call(t.url, 'GET', `/api/v1/reports/oversight?${PERIOD}`, { key });
      assert.equal(fromApp.status, 200);
      assert.equal(fromApp.text, fromApi.text);
      const bad = await app.get(viewer, '/app/reports/activity?from=2026-06-02&to=2026-06-01&format=csv');
      assert.equal(bad.status, 422);
      assert.match(bad.text, /must be after from/);
      assert.equal((await app.get(null, '/app/reports/oversight')).status, 303);
    });
  });
}
