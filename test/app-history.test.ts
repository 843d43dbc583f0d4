/**
 * The History page: who decided each hold and their comments, substring filters (any case, `%` and `_`
 * literal), totals by outcome, numbered pages that stay put while holds arrive, the CSV of every
 * matching hold, a summary of each hold's arguments without reading them, another workspace's holds
 * never shown, and bad URLs refused with a page that names the field and never quotes it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decideHold } from '../src/services/decide-hold.ts';
import type { HoldRequest } from '../src/services/submit-hold.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, type Page, type Session, unescapeHtml } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { parseCsv } from './support/csv.ts';
import { seedHolds } from './support/seed.ts';
import { startTestService, type TestService } from './support/service.ts';

/** The hold ids of a History page, in the order shown. */
const idsOf = (page: Page) =>
  [...page.text.matchAll(/<a href="\/app\/holds\/(svc_pa_[A-Za-z0-9_-]+)"/g)]
    .map((m) => m[1]!)
    .filter((id, i, all) => all.indexOf(id) === i);

/** The value a filter field of the form shows, as written in the HTML (escaped). */
const formValue = (page: Page, name: string) =>
  page.text.match(new RegExp(`<input\\s+id="f-${name}"[^>]*\\svalue="([^"]*)"`))?.[1];

/** A page's link by its text (`Next ›`, `3`), unescaped; null when it is not a link there. */
const linkOf = (page: Page, text: string) => {
  for (const [, href, inner] of page.text.matchAll(/<a href="([^"]+)"[^>]*>([^<]*)</g))
    if (inner!.trim() === text) return unescapeHtml(href!);
  return null;
};

/** The text of a page without its tags, spaces collapsed. */
const textOf = (html: string) => unescapeHtml(html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' '));

const MEMBERS = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: ada@acme.test, name: Ada Lovelace, role: admin }
  - { email: bob@acme.test, name: Bob Stone, role: admin }
tools:
  - { connection: SDK, tool: read_balance, classification: allow }
  - { connection: SDK, tool: drop_db, classification: deny }
rules:
  - { name: Wires need two, tool: payments.wire, effect: approval, approvers: ["role:admin"], approvals_required: 2 }
`;

for (const backend of backends) {
  describe(`history page on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    const app = appClient(() => t);

    before(async () => {
      t = await startTestService(backend);
    });
    after(() => t?.close());

    const seed = (workspace: Workspace, list: (Partial<HoldRequest> & Pick<HoldRequest, 'toolName'>)[]) =>
      seedHolds(t.service.ctx, workspace, list.length, (i) => list[i]!);

    async function decide(
      workspace: Workspace,
      id: string,
      email: string,
      verdict: 'approve' | 'reject',
      comment?: string,
    ) {
      const member = (await findMemberByEmail(t.service.ctx.db, workspace.id, email))!;
      const result = await decideHold(t.service.ctx, {
        workspaceId: workspace.id,
        holdId: id,
        memberId: member.id,
        verdict,
        comment,
        channel: 'inbox',
      });
      assert.equal(result.outcome, 'recorded');
    }

    /** Past its deadline: the deadline worker expires it. */
    async function expire(id: string) {
      await t.service.ctx.db.run('UPDATE holds SET expires_at = $1 WHERE id = $2', [Date.now() - 1000, id]);
      await t.settled();
    }

    const setCreatedAt = (id: string, at: number) =>
      t.service.ctx.db.run('UPDATE holds SET created_at = $1 WHERE id = $2', [at, id]);

    async function history(session: Session, query: Record<string, string> | string = {}): Promise<Page> {
      const text = typeof query === 'string' ? query : new URLSearchParams(query).toString();
      return app.get(session, `/app/history${text ? `?${text}` : ''}`);
    }

    /** One hold of each outcome, decided through the services; their ids by name. */
    async function everyOutcome() {
      const { workspace } = await t.workspace({ config: MEMBERS });
      const long = `${'Checked against the contract, clause by clause. '.repeat(5)}<script>alert(1)</script> END-OF-COMMENT`;
      const [approved, rejected, fourEyes, expired, allowed, denied, withdrawn, pending] = await seed(
        workspace,
        [
          { toolName: 'send_invoice', arguments: { customer: 'acme-corp', amount: 4200 } },
          { toolName: 'send_invoice', arguments: { customer: 'globex', amount: 90 } },
          { toolName: 'payments.wire', arguments: { amount: 1_000_000 } },
          { toolName: 'send_invoice', agent: { id: 'agent-expiry', label: 'Slow bot' } },
          { toolName: 'read_balance' },
          { toolName: 'drop_db' },
          { toolName: 'send_invoice' },
          { toolName: 'send_invoice', arguments: { note: 'say "hi" to C:\\temp' } },
        ],
      );
      await decide(workspace, approved!, 'ada@acme.test', 'approve', 'Looks right: 50% off_the list');
      await decide(workspace, rejected!, 'bob@acme.test', 'reject', long);
      await decide(workspace, fourEyes!, 'ada@acme.test', 'approve');
      await expire(fourEyes!);
      await expire(expired!);
      await t.service.ctx.db.run(
        "UPDATE holds SET status = 'rejected', verdict = 'reject', channel = 'agent', decided_at = $1 WHERE id = $2",
        [Date.now(), withdrawn],
      );
      const ids = { approved, rejected, fourEyes, expired, allowed, denied, withdrawn, pending } as Record<
        string,
        string
      >;
      return { workspace, ids, long };
    }

    test('each row says who decided, with the verdict or what else decided, and the comments', async () => {
      const { workspace, ids, long } = await everyOutcome();
      const session = await app.signIn(workspace, 'admin@acme.test');
      const page = await history(session);
      assert.equal(page.status, 200);
      const rowOf = (id: string) => {
        const row = page.text.split('<tr>').find((part) => part.includes(`/app/holds/${id}"`));
        assert.ok(row, id);
        return row;
      };
      const cell = (id: string, label: string) =>
        textOf(rowOf(id).match(new RegExp(`<td data-label="${label}"[^>]*>([\\s\\S]*?)</td>`))![1]!).trim();

      assert.match(cell(ids.approved!, 'Decided by'), /^Ada Lovelace \(approved\) /);
      assert.equal(cell(ids.approved!, 'Comment'), 'Ada Lovelace: Looks right: 50% off_the list');
      assert.match(cell(ids.rejected!, 'Decided by'), /^Bob Stone \(rejected\) /);
      assert.match(cell(ids.fourEyes!, 'Decided by'), /^Ada Lovelace \(approved\) expired/);
      assert.equal(cell(ids.expired!, 'Decided by'), 'expired');
      assert.equal(cell(ids.allowed!, 'Decided by'), 'allowed by rule');
      assert.match(cell(ids.denied!, 'Decided by'), /^denied by rule /);
      assert.match(cell(ids.withdrawn!, 'Decided by'), /^withdrawn by the agent /);
      assert.equal(cell(ids.pending!, 'Decided by'), '—');
      assert.equal(cell(ids.pending!, 'Comment'), '—');

      // A long comment is cut, escaped, with a link to the hold's page, which has it whole.
      const comment = cell(ids.rejected!, 'Comment');
      assert.match(comment, /^Bob Stone: Checked against the contract.*… full text of the comments$/);
      assert.ok(comment.length < 160, comment);
      assert.ok(!page.text.includes('<script>alert'), 'the comment is escaped');
      assert.ok(!page.text.includes('END-OF-COMMENT'));
      assert.match(rowOf(ids.rejected!), new RegExp(`<a href="/app/holds/${ids.rejected}"\\s*>full text`));
      const hold = await app.get(session, `/app/holds/${ids.rejected}`);
      assert.ok(unescapeHtml(hold.text).includes(long), 'the hold page has the whole comment');
      assert.ok(!hold.text.includes('<script>alert'));
    });

    test("an agent's hidden characters are shown escaped", async () => {
      const { workspace } = await t.workspace();
      const [id] = await seed(workspace, [
        { toolName: 'send_invoice', agent: { id: 'agent\u202eevil', label: 'Bill\u200bing <b>bot</b>' } },
      ]);
      await t.service.ctx.db.run('UPDATE holds SET tool_name = $1 WHERE id = $2', ['pay\u202ements', id]);
      const session = await app.signIn(workspace, 'admin@acme.test');
      const page = await history(session);
      assert.ok(!/[\u202e\u200b]/.test(page.text), 'no hidden character on the page');
      assert.match(page.text, /pay\\u202ements/);
      assert.match(page.text, /Bill\\u200bing &lt;b&gt;bot&lt;\/b&gt;/);
      assert.match(page.text, /title="agent\\u202eevil"/);
    });

    test('filters are substrings in any case: tool, agent, decided by, text in arguments and comments', async () => {
      const { workspace, ids } = await everyOutcome();
      // LIKE's own characters in a name: literal in a filter.
      const [percent, underscore, plain] = await seed(workspace, [
        { toolName: 'odd' },
        { toolName: 'odd' },
        { toolName: 'payXments' },
      ]);
      await t.service.ctx.db.run('UPDATE holds SET tool_name = $1 WHERE id = $2', ['pay%ments', percent]);
      await t.service.ctx.db.run('UPDATE holds SET tool_name = $1 WHERE id = $2', ['pay_ments', underscore]);
      const session = await app.signIn(workspace, 'admin@acme.test');
      const shown = async (query: Record<string, string>) => {
        const page = await history(session, query);
        assert.equal(page.status, 200, JSON.stringify(query));
        return idsOf(page).sort();
      };
      const sorted = (...list: (string | undefined)[]) => (list as string[]).sort();
      const invoices = sorted(ids.approved, ids.rejected, ids.expired, ids.withdrawn, ids.pending);

      assert.deepEqual(await shown({ tool: 'INVOICE' }), invoices);
      assert.deepEqual(await shown({ tool: 'wire' }), [ids.fourEyes]);
      assert.deepEqual(await shown({ tool: '%' }), [percent]);
      assert.deepEqual(await shown({ tool: 'y_m' }), [underscore]);
      assert.deepEqual(await shown({ tool: 'pay%m' }), [percent]);
      assert.deepEqual(await shown({ tool: 'payxm' }), [plain]);
      assert.deepEqual(await shown({ agent: 'SLOW' }), [ids.expired]);
      assert.deepEqual(await shown({ agent: 'expiry' }), [ids.expired]);
      assert.deepEqual(await shown({ decided_by: 'lovelace' }), sorted(ids.approved, ids.fourEyes));
      assert.deepEqual(await shown({ decided_by: 'BOB@acme' }), [ids.rejected]);
      assert.deepEqual(await shown({ decided_by: '%' }), []);
      assert.deepEqual(await shown({ text: 'ACME-corp' }), [ids.approved]);
      assert.deepEqual(await shown({ text: 'clause by CLAUSE' }), [ids.rejected]);
      // `%` and `_` are literal: "50% off_" is in one comment, and nothing has "50%_".
      assert.deepEqual(await shown({ text: '50% off_' }), [ids.approved]);
      assert.deepEqual(await shown({ text: '50%_' }), []);
      assert.deepEqual(await shown({ text: '%_' }), []);
      assert.deepEqual(await shown({ text: '_the' }), [ids.approved]);
      // Quotes and backslashes as the agent sent them, not as JSON stores them.
      assert.deepEqual(await shown({ text: 'say "hi" to C:\\temp' }), [ids.pending]);
      // Together, and with the status.
      assert.deepEqual(await shown({ tool: 'invoice', decided_by: 'ada' }), [ids.approved]);
      assert.deepEqual(await shown({ tool: 'invoice', status: 'expired' }), [ids.expired]);
      assert.deepEqual(await shown({ tool: 'invoice', text: 'globex', decided_by: 'ada' }), []);

      // The form shows the values again, escaped; the empty result says so.
      const page = await history(session, { text: '"<b>x' });
      assert.equal(formValue(page, 'text'), '&quot;&lt;b&gt;x');
      assert.match(page.text, /No holds match these filters\./);
    });

    test('totals count every matching hold by outcome; the numbered pages stay put as holds arrive', async () => {
      const { workspace } = await t.workspace({ config: MEMBERS });
      const ids = await seed(
        workspace,
        Array.from({ length: 123 }, (_, i) => ({ toolName: i % 3 === 0 ? 'read_balance' : 'send_invoice' })),
      );
      const base = Date.now() - 3_600_000;
      // Two share each millisecond, so ties straddle pages.
      for (const [i, id] of ids.entries()) await setCreatedAt(id, base + Math.floor(i / 2));
      const held = ids.filter((_, i) => i % 3 !== 0);
      for (const id of held.slice(0, 30)) await decide(workspace, id, 'ada@acme.test', 'approve');
      for (const id of held.slice(30, 40)) await decide(workspace, id, 'bob@acme.test', 'reject');
      const session = await app.signIn(workspace, 'admin@acme.test');

      const first = await history(session);
      const text = textOf(first.text);
      assert.match(text, /1–50 of 123 holds/);
      assert.match(text, /approved 30 rejected 10 expired 0 allowed 41 denied 0 withdrawn 0 pending 42/);
      assert.equal(linkOf(first, '« First'), null);
      assert.equal(linkOf(first, '‹ Previous'), null);
      assert.match(first.text, /<span aria-current="page">1<\/span>/);
      const last = linkOf(first, 'Last »')!;
      assert.equal(new URL(last, t.url).searchParams.get('page'), '3');

      // Every page by number: each hold once, newest first, across the ties.
      const pages = [first, await app.get(session, linkOf(first, '2')!), await app.get(session, last)];
      assert.match(textOf(pages[1]!.text), /51–100 of 123 holds/);
      assert.match(textOf(pages[2]!.text), /101–123 of 123 holds/);
      assert.equal(linkOf(pages[2]!, 'Next ›'), null);
      assert.ok(linkOf(pages[2]!, '« First'));
      const all = pages.flatMap(idsOf);
      assert.deepEqual(
        all,
        [...ids].reverse().sort((a, b) => {
          const at = (id: string) => Math.floor(ids.indexOf(id) / 2);
          return at(b) - at(a) || (a < b ? 1 : -1);
        }),
      );

      // Holds arriving meanwhile shift no page; the page says they came and leads to them.
      const fresh = await seed(workspace, [{ toolName: 'send_invoice' }, { toolName: 'send_invoice' }]);
      const again = await app.get(session, linkOf(first, '2')!);
      assert.deepEqual(idsOf(again), idsOf(pages[1]!));
      assert.match(textOf(again.text), /51–100 of 123 holds/);
      assert.match(textOf(again.text), /2 newer holds since this list was drawn\. Show the newest/);
      const newest = await app.get(session, linkOf(again, 'Show the newest')!);
      assert.deepEqual(idsOf(newest).slice(0, 2).sort(), [...fresh].sort());
      assert.match(textOf(newest.text), /1–50 of 125 holds/);

      // Filters count too, and the links keep them.
      const allowed = await history(session, { tool: 'balance' });
      assert.match(textOf(allowed.text), /1–41 of 41 holds/);
      assert.equal(linkOf(allowed, 'Next ›'), null, 'one page: no jumps');
      const approved = await history(session, { status: 'approved', decided_by: 'ada' });
      assert.match(textOf(approved.text), /1–30 of 30 holds Download CSV approved 30 rejected 0 /);

      // Past the last page: nothing listed, and the way back.
      const beyond = await app.get(session, `${last.replace('page=3', 'page=9')}`);
      assert.equal(beyond.status, 200);
      assert.deepEqual(idsOf(beyond), []);
      assert.match(textOf(beyond.text), /No holds on this page: there are 3 pages\./);
      assert.ok(linkOf(beyond, 'Last »'));
    });

    test('the CSV has every matching hold, not only the page, with formulas defused', async () => {
      const { workspace, ids } = await everyOutcome();
      const many = await seed(
        workspace,
        Array.from({ length: 60 }, () => ({
          toolName: 'send_invoice',
          agent: { id: '=HYPERLINK("http://evil.test")', label: '@SUM(A1)' },
        })),
      );
      await decide(workspace, many[0]!, 'ada@acme.test', 'reject', 'fine, "quoted"\n=1+1');
      const session = await app.signIn(workspace, 'admin@acme.test');
      const page = await history(session, { tool: 'invoice' });
      const href = page.text.match(/<a class="button secondary" href="([^"]+)"\s*>Download CSV<\/a/)?.[1];
      assert.ok(href, 'the page links its CSV');
      const csvUrl = unescapeHtml(href);
      assert.equal(new URL(csvUrl, t.url).searchParams.get('tool'), 'invoice', 'of the same filter');
      const download = await fetch(t.url + csvUrl, {
        headers: { cookie: `approvals_session=${session.cookie}` },
      });
      assert.equal(download.status, 200);
      assert.match(download.headers.get('content-type') ?? '', /^text\/csv/);
      assert.match(
        download.headers.get('content-disposition') ?? '',
        /^attachment; filename="history-ws-[\w-]+\.csv"$/,
      );
      const rows = parseCsv(await download.text());
      assert.deepEqual(rows[0]!.slice(0, 3), ['reference', 'created_at', 'connection']);
      const header = rows[0]!;
      const records = rows
        .slice(1)
        .map((row) => Object.fromEntries(header.map((name, i) => [name, row[i]!])));
      assert.equal(records.length, 65, 'every matching hold: 60 + 5 invoices, past the page of 50');
      const byId = new Map(records.map((record) => [record.reference, record]));
      assert.ok(
        [ids.approved, ids.rejected, ids.expired, ids.withdrawn, ids.pending].every((id) => byId.has(id!)),
      );
      assert.equal(byId.get(ids.approved!)!.decided_by, 'Ada Lovelace (approved)');
      assert.equal(byId.get(ids.approved!)!.outcome, 'approved');
      assert.equal(byId.get(ids.withdrawn!)!.decided_by, 'withdrawn by the agent');
      assert.match(
        byId.get(ids.rejected!)!.comments!,
        /<script>alert\(1\)<\/script> END-OF-COMMENT$/,
        'whole',
      );
      const evil = byId.get(many[0]!)!;
      assert.equal(evil.agent_id, `'=HYPERLINK("http://evil.test")`);
      assert.equal(evil.agent_label, "'@SUM(A1)");
      assert.equal(evil.comments, `'Ada Lovelace: fine, "quoted"\n=1+1`);
      assert.equal(evil.outcome, 'rejected');
      // The filter of the page only: the allowed hold of another tool is not in it.
      assert.ok(!byId.has(ids.allowed!));
      // A CSV without filters has them all.
      const everything = parseCsv((await app.get(session, '/app/history.csv')).text);
      assert.equal(everything.length - 1, 68);
    });

    test("a member of another workspace sees none of this workspace's holds", async () => {
      const { workspace, ids } = await everyOutcome();
      const other = await t.workspace({ config: MEMBERS });
      const [theirs] = await seed(other.workspace, [{ toolName: 'send_invoice' }]);
      const mine = await app.signIn(workspace, 'ada@acme.test');
      const stranger = await app.signIn(other.workspace, 'ada@acme.test');
      const own = await history(mine);
      const cursor = unescapeHtml(own.text.match(/href="\/app\/history\.csv\?upto=([^"&]+)"/)![1]!);
      for (const query of ['', 'decided_by=ada', 'text=acme-corp', `upto=${cursor}`, 'tool=invoice']) {
        const page = await history(stranger, query);
        const listed = idsOf(page);
        assert.ok(!Object.values(ids).some((id) => listed.includes(id)), query);
        const csv = await app.get(stranger, `/app/history.csv?${query}`);
        assert.ok(!Object.values(ids).some((id) => csv.text.includes(id)), query);
      }
      assert.deepEqual(idsOf(await history(stranger)), [theirs]);
      assert.equal(parseCsv((await app.get(stranger, '/app/history.csv')).text).length, 2);
      assert.equal((await app.get(null, '/app/history.csv')).status, 303, 'signed out: to the sign-in page');
    });

    test('each row summarizes its arguments; a 1 MB hold is listed without them', async () => {
      const { workspace } = await t.workspace();
      const secret = 'TAIL-OF-A-HUGE-ARGUMENT';
      const [invoice, empty, huge, legacy] = await seed(workspace, [
        { toolName: 'send_invoice', arguments: { amount: 4200, currency: 'EUR' } },
        { toolName: 'send_invoice', arguments: {} },
        { toolName: 'upload_file', arguments: { name: 'dump.bin', content: 'A'.repeat(1_000_000) + secret } },
        { toolName: 'send_invoice', arguments: { to: 'acme', amount: 12 } },
      ]);
      // A hold stored before summaries were kept (migration 015): summarized on reading, while small.
      await t.service.ctx.db.run('UPDATE holds SET arguments_summary = NULL WHERE id = $1', [legacy]);
      const session = await app.signIn(workspace, 'admin@acme.test');
      const page = await history(session);
      assert.equal(page.status, 200);
      const rowOf = (id: string) => {
        const row = page.text.split('<tr>').find((part) => part.includes(`/app/holds/${id}"`));
        assert.ok(row, id);
        return textOf(row);
      };
      assert.match(rowOf(invoice!), / amount=4200, currency="EUR" /);
      assert.match(rowOf(empty!), / none /);
      assert.match(rowOf(legacy!), / amount=12, to="acme" /);
      assert.match(rowOf(huge!), /name="dump\.bin", content="A+… \(1\.0 MB\)/);
      assert.ok(!page.text.includes(secret), 'the end of the huge argument is not on the page');
      assert.ok(page.text.length < 40_000, `the page is small: ${page.text.length} characters`);
    });

    test('bad URLs get a clear 400 page that quotes nothing, lists nothing and changes nothing', async () => {
      const { workspace } = await t.workspace();
      const [id] = await seed(workspace, [{ toolName: 'payments.charge' }]);
      const session = await app.signIn(workspace, 'admin@acme.test');
      const snapshot = await t.service.ctx.db.all('SELECT id, status, created_at FROM holds ORDER BY id');
      const marker = 'QUOTEDVALUE';
      const cases: [string, RegExp][] = [
        [`tool=${marker}${'x'.repeat(200)}`, /Tool: at most 200 characters\./],
        [`agent=${marker}${'x'.repeat(5000)}`, /Agent: at most 200 characters\./],
        [`decided_by=${marker}${'x'.repeat(200)}`, /Decided by: at most 200 characters\./],
        [`text=${marker}%00`, /Text: contains a NUL character\./],
        [`status=${marker}`, /Status: not one of the statuses listed\./],
        [`from=${marker}`, /From: not a day/],
        ['to=2024-02-31', /To: not a day/],
        [`page=${marker}`, /Page: not a page number\./],
        ['page=0', /Page: not a page number\./],
        ['page=-1', /Page: not a page number\./],
        ['page=99999999', /Page: not a page number\./],
        [`upto=${marker}`, /Page: the link to this page is not valid/],
        [`upto=1_svc_pa_${marker}%3Cscript%3E`, /Page: the link to this page is not valid/],
        [`upto=99999999999999999_svc_pa_${marker}`, /Page: the link to this page is not valid/],
        ['page=1&page=2', /Page: given more than once\./],
        [`tool=a&tool=${marker}`, /Tool: given more than once\./],
      ];
      for (const [query, message] of cases) {
        for (const path of ['/app/history', '/app/history.csv']) {
          const page = await app.get(session, `${path}?${query}`);
          assert.equal(page.status, 400, `${path}?${query}`);
          assert.match(page.text, /This history page cannot be shown/, query);
          assert.match(page.text, message, query);
          assert.ok(!page.text.includes(marker), `${query}: the value is not quoted`);
          assert.deepEqual(idsOf(page), [], `${query}: no holds listed`);
        }
      }
      // The filters that were understood stay, in the form and in the way out.
      const mixed = await history(session, { tool: 'payments', status: 'nope' });
      assert.equal(mixed.status, 400);
      assert.equal(formValue(mixed, 'tool'), 'payments');
      assert.equal(formValue(mixed, 'agent'), '');
      assert.match(mixed.text, /<a href="\/app\/history\?tool=payments">/);
      assert.deepEqual(
        await t.service.ctx.db.all('SELECT id, status, created_at FROM holds ORDER BY id'),
        snapshot,
      );

      // Odd but well-formed filters are no error: they match what they say.
      for (const tool of ['%', '_', '\\', '[a-z]*', "'; DROP TABLE holds; --", '<script>x</script>']) {
        const page = await history(session, { tool, text: tool, decided_by: tool, agent: tool });
        assert.equal(page.status, 200, tool);
        assert.ok(!page.text.includes('<script>x'), tool);
        assert.deepEqual(idsOf(page), [], tool);
      }
      assert.deepEqual(idsOf(await history(session, { tool: 'CHARGE' })), [id]);
      // Empty parameters are no filter.
      assert.deepEqual(idsOf(await history(session, 'tool=&page=&upto=')), [id]);
    });
  });
}
