/**
 * The History page: filters (status, tool glob, agent by id or label, dates), a summary of each hold's
 * arguments without ever reading them, newer and older pages that meet exactly, and bad URLs refused
 * with a page that names the field and never quotes it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { submitHold } from '../src/services/submit-hold.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, type Page, type Session, unescapeHtml } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { startTestService, type TestService } from './support/service.ts';

/** The hold ids of a History page, in the order shown. */
const idsOf = (page: Page) =>
  [...page.text.matchAll(/<a href="\/app\/holds\/(svc_pa_[A-Za-z0-9_-]+)"/g)].map((m) => m[1]!);

/** The value a filter field of the form shows, as written in the HTML (escaped). */
const formValue = (page: Page, name: string) =>
  page.text.match(new RegExp(`<input\\s+id="f-${name}"[^>]*\\svalue="([^"]*)"`))?.[1];

/** The path of the page's "← Newer" (`prev`) or "Older →" (`next`) link, if it has one. */
const linkOf = (page: Page, rel: 'prev' | 'next') => {
  const href = page.text.match(new RegExp(`<a href="([^"]+)" rel="${rel}"`))?.[1];
  return href === undefined ? null : unescapeHtml(href);
};

for (const backend of backends) {
  describe(`history page on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    const app = appClient(() => t);

    before(async () => {
      t = await startTestService(backend);
    });
    after(() => t?.close());

    async function submit(key: string, overrides: Record<string, unknown> = {}): Promise<string> {
      const answer = await call(t.url, 'POST', '/api/v1/holds', { key, body: submission(overrides) });
      assert.equal(answer.status, 201, answer.text);
      return answer.body.id as string;
    }

    /** Submits in parallel, ten at a time; the ids in the order of `list`. */
    async function submitAll(key: string, list: Record<string, unknown>[]): Promise<string[]> {
      const ids: string[] = [];
      for (let i = 0; i < list.length; i += 10)
        ids.push(...(await Promise.all(list.slice(i, i + 10).map((overrides) => submit(key, overrides)))));
      return ids;
    }

    /** Many holds through the submission service (the API takes 120 a minute); their ids in order. */
    async function seed(workspace: Workspace, toolNames: string[]): Promise<string[]> {
      const ids: string[] = [];
      for (const [i, toolName] of toolNames.entries()) {
        const { body } = await submitHold(
          t.service.ctx,
          {
            workspace,
            environment: 'live',
            requester: { kind: 'key' as const, keyId: 'key_direct', agentId: null, owner: null },
          },
          {
            connection: 'SDK',
            toolName,
            arguments: { amount: i, currency: 'EUR' },
            agent: { id: 'billing-bot', label: 'Billing bot' },
            context: {},
            idempotencyKey: `history-${i}-${Math.random()}`,
          },
        );
        ids.push(body.id);
      }
      return ids;
    }

    const setCreatedAt = (id: string, at: number) =>
      t.service.ctx.db.run('UPDATE holds SET created_at = $1 WHERE id = $2', [at, id]);

    async function history(session: Session, query: Record<string, string> | string = {}): Promise<Page> {
      const text = typeof query === 'string' ? query : new URLSearchParams(query).toString();
      return app.get(session, `/app/history${text ? `?${text}` : ''}`);
    }

    /** Every page from the first, following "Older →"; checks each one's "← Newer" leads back exactly. */
    async function walk(session: Session, query: Record<string, string> = {}): Promise<string[][]> {
      const pages: Page[] = [await history(session, query)];
      for (let next = linkOf(pages[0]!, 'next'); next; next = linkOf(pages.at(-1)!, 'next')) {
        assert.ok(pages.length < 20, 'the pages end');
        pages.push(await app.get(session, next));
      }
      const ids = pages.map(idsOf);
      assert.equal(linkOf(pages[0]!, 'prev'), null, 'the first page has nothing newer');
      for (let i = 1; i < pages.length; i += 1) {
        const back = linkOf(pages[i]!, 'prev');
        assert.ok(back, `page ${i + 1} leads back`);
        for (const [name, value] of Object.entries(query))
          assert.equal(new URL(back, t.url).searchParams.get(name), value, `${name} kept in the link`);
        assert.deepEqual(
          idsOf(await app.get(session, back)),
          ids[i - 1],
          `page ${i + 1} leads back to page ${i}`,
        );
      }
      return ids;
    }

    test('a tool glob filters as the rules match: literal, case-exact, `?` one character', async () => {
      const { workspace, key } = await t.workspace();
      const tools = [
        'payments.refund',
        'payments.charge',
        'Payments.charge',
        'paymentsXrefund',
        'github.merge',
        'github.merge_pr',
        'github.emerge',
        'gitlab.merge',
        'pay_ments',
        'payXments',
      ];
      const ids = Object.fromEntries(
        (
          await submitAll(
            key,
            tools.map((tool_name) => ({ tool_name })),
          )
        ).map((id, i) => [tools[i]!, id]),
      );
      // Names the Hold API refuses but MCP tools may have: LIKE's own characters are literal too.
      const odd = ['pay%ments', 'pay\\ments', "pay'<b>ments"];
      for (const name of odd) {
        ids[name] = await submit(key, { tool_name: 'odd' });
        await t.service.ctx.db.run('UPDATE holds SET tool_name = $1 WHERE id = $2', [name, ids[name]]);
      }
      const session = await app.signIn(workspace, 'admin@acme.test');
      const shown = async (tool: string) => {
        const page = await history(session, { tool });
        assert.equal(page.status, 200, tool);
        return idsOf(page)
          .map((id) => Object.keys(ids).find((name) => ids[name] === id)!)
          .sort();
      };
      assert.deepEqual(await shown('payments.*'), ['payments.charge', 'payments.refund']);
      assert.deepEqual(await shown('github.?erge*'), ['github.merge', 'github.merge_pr']);
      assert.deepEqual(await shown('payments.refund'), ['payments.refund']);
      assert.deepEqual(await shown('*.charge'), ['Payments.charge', 'payments.charge']);
      assert.deepEqual(await shown('pay_ments'), ['pay_ments']);
      assert.deepEqual(await shown('pay%ments'), ['pay%ments']);
      assert.deepEqual(await shown('pay\\ments'), ['pay\\ments']);
      assert.deepEqual(await shown("pay'<b>ments"), ["pay'<b>ments"]);
      assert.deepEqual(await shown('pay?ments'), ['pay%ments', 'payXments', 'pay\\ments', 'pay_ments']);
      assert.deepEqual(await shown('%'), []);
      assert.deepEqual(await shown('_*'), []);
      assert.deepEqual(await shown('nothing.*'), []);
      assert.equal((await shown('*')).length, tools.length + odd.length);

      // The glob comes back in the form as a value; the odd name in its row as text.
      const page = await history(session, { tool: "pay'<b>ments" });
      assert.equal(formValue(page, 'tool'), 'pay&#39;&lt;b&gt;ments');
      assert.ok(!page.text.includes('<b>ments'));
      assert.match((await history(session, { tool: 'nothing.*' })).text, /No holds match these filters\./);
    });

    test('the agent filter takes an id or a label, exactly, with the other filters', async () => {
      const { workspace, key } = await t.workspace();
      const billing = await submitAll(key, [
        { agent_identity: { id: 'agent-billing', label: 'Billing bot' } },
        { agent_identity: { id: 'agent-billing', label: 'Billing bot' }, tool_name: 'send_reminder' },
      ]);
      const [labelled] = await submitAll(key, [
        { agent_identity: { id: 'agent-7', label: 'agent-billing' } },
      ]);
      const [other] = await submitAll(key, [
        { agent_identity: { id: 'agent-support', label: 'Support bot' } },
      ]);
      const [bare] = await submitAll(key, [{ agent_identity: { id: 'Billing bot' } }]);
      const session = await app.signIn(workspace, 'admin@acme.test');
      const shown = async (query: Record<string, string>) => idsOf(await history(session, query)).sort();

      // By id: the holds of that agent and the one whose label is that id.
      assert.deepEqual(await shown({ agent: 'agent-billing' }), [...billing, labelled!].sort());
      // By label: the agent's holds and the one whose id is that label.
      assert.deepEqual(await shown({ agent: 'Billing bot' }), [...billing, bare!].sort());
      assert.deepEqual(await shown({ agent: 'Support bot' }), [other]);
      assert.deepEqual(await shown({ agent: 'agent-support' }), [other]);
      // Exactly: no prefix, no other case, surrounding spaces trimmed.
      assert.deepEqual(await shown({ agent: 'agent-' }), []);
      assert.deepEqual(await shown({ agent: 'billing bot' }), []);
      assert.deepEqual(await shown({ agent: '  Support bot ' }), [other]);
      // With a tool glob and a status.
      assert.deepEqual(await shown({ agent: 'Billing bot', tool: 'send_r*' }), [billing[1]]);
      assert.deepEqual(await shown({ agent: 'Billing bot', status: 'approved' }), []);
      assert.equal((await shown({ agent: 'Billing bot', status: 'pending' })).length, 3);

      // Each row names the agent by its label, its id as the cell's title; the form keeps the value.
      const page = await history(session, { agent: 'Support bot' });
      assert.match(page.text, /<td data-label="Agent" title="agent-support">Support bot<\/td>/);
      assert.equal(formValue(page, 'agent'), 'Support bot');
    });

    test('each row summarizes its arguments; a 1 MB hold is listed without them', async () => {
      const { workspace, key } = await t.workspace();
      const invoice = await submit(key, { arguments: { amount: 4200, currency: 'EUR' } });
      const empty = await submit(key, { arguments: {} });
      const secret = 'TAIL-OF-A-HUGE-ARGUMENT';
      const huge = await submit(key, {
        tool_name: 'upload_file',
        arguments: { name: 'dump.bin', content: 'A'.repeat(1_000_000) + secret },
      });
      // A hold stored before summaries were kept (migration 015): summarized on reading, while small.
      const legacy = await submit(key, { arguments: { to: 'acme', amount: 12 } });
      await t.service.ctx.db.run('UPDATE holds SET arguments_summary = NULL WHERE id = $1', [legacy]);
      const session = await app.signIn(workspace, 'admin@acme.test');
      const page = await history(session);
      assert.equal(page.status, 200);
      const rowOf = (id: string) => {
        const row = page.text.split('<tr>').find((part) => part.includes(`/app/holds/${id}"`));
        assert.ok(row, id);
        return unescapeHtml(row.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' '));
      };
      assert.match(rowOf(invoice), / amount=4200, currency="EUR" /);
      assert.match(rowOf(empty), / none /);
      assert.match(rowOf(legacy), / to="acme", amount=12 /);
      assert.match(rowOf(huge), /name="dump\.bin", content="A+… \(1\.0 MB\)/);
      assert.match(rowOf(huge), /\(1\.0 MB\)/);
      assert.ok(!page.text.includes(secret), 'the end of the huge argument is not on the page');
      assert.ok(page.text.length < 30_000, `the page is small: ${page.text.length} characters`);
      assert.match(page.text, /<td data-label="Arguments" class="summary">/);
    });

    test('older and newer pages meet exactly across three pages, with and without a filter', async () => {
      const { workspace } = await t.workspace();
      // 150 holds: 113 `payments.*`, 37 `crm.update`; four share each millisecond, so ties straddle pages.
      const tools = Array.from({ length: 150 }, (_, i) =>
        i % 4 === 3 ? 'crm.update' : i % 2 ? 'payments.refund' : 'payments.charge',
      );
      const ids = await seed(workspace, tools);
      const base = Date.now() - 3_600_000;
      for (const [i, id] of ids.entries()) await setCreatedAt(id, base + Math.floor(i / 4));
      const payments = ids.filter((_, i) => tools[i] !== 'crm.update');
      const session = await app.signIn(workspace, 'admin@acme.test');

      const check = async (query: Record<string, string>, expected: string[], sizes: number[]) => {
        const pages = await walk(session, query);
        assert.deepEqual(
          pages.map((p) => p.length),
          sizes,
          `page sizes for ${JSON.stringify(query)}`,
        );
        const all = pages.flat();
        assert.equal(new Set(all).size, all.length, 'no hold twice');
        assert.deepEqual([...all].sort(), [...expected].sort(), 'none lost');
        // Newest first, across the page boundaries too.
        const created = all.map((id) => Math.floor(ids.indexOf(id) / 4));
        assert.deepEqual(
          created,
          [...created].sort((a, b) => b - a),
        );
        return pages;
      };
      const unfiltered = await check({}, ids, [50, 50, 50]);
      assert.equal(payments.length, 113);
      await check({ tool: 'payments.*' }, payments, [50, 50, 13]);
      await check({ tool: 'payments.*', status: 'pending' }, payments, [50, 50, 13]);

      // Holds arriving meanwhile shift nothing: page 2 is still page 2, and its Newer link still leads
      // to the holds just newer than it (the old page 1), then to the new ones.
      const first = await history(session);
      const second = await app.get(session, linkOf(first, 'next')!);
      const fresh = await seed(workspace, ['payments.charge', 'crm.update', 'payments.refund']);
      assert.deepEqual(idsOf(await app.get(session, linkOf(first, 'next')!)), unfiltered[1]);
      const back = await app.get(session, linkOf(second, 'prev')!);
      assert.deepEqual(idsOf(back), unfiltered[0]);
      const top = await app.get(session, linkOf(back, 'prev')!);
      assert.deepEqual(idsOf(top).slice(0, 3).sort(), [...fresh].sort());
      assert.equal(idsOf(top).length, 50);
      assert.equal(linkOf(top, 'prev'), null, 'the newest page again');

      // Past the oldest hold: an empty page that leads back.
      const [oldest] = unfiltered[2]!.slice(-1);
      const beyond = await history(session, { before: `${base - 1}_${oldest}` });
      assert.equal(beyond.status, 200);
      assert.deepEqual(idsOf(beyond), []);
      assert.match(beyond.text, /No older holds match\./);
      assert.ok(linkOf(beyond, 'prev'));
      assert.equal(linkOf(beyond, 'next'), null);
    });

    test('a glob that SQL can only narrow still fills each page exactly', async () => {
      const { workspace } = await t.workspace();
      // `crm.??????` is `crm.update` alone, but its LIKE (`crm.___%`, as `??` may be one character
      // outside the BMP) also takes the 230 newer `crm.updated`: pages are filled past them.
      const wanted = await seed(workspace, Array<string>(60).fill('crm.update'));
      const near = await seed(workspace, Array<string>(230).fill('crm.updated'));
      const base = Date.now() - 3_600_000;
      for (const [i, id] of [...wanted, ...near].entries()) await setCreatedAt(id, base + i);
      const session = await app.signIn(workspace, 'admin@acme.test');
      const pages = await walk(session, { tool: 'crm.??????' });
      assert.deepEqual(
        pages.map((page) => page.length),
        [50, 10],
      );
      assert.deepEqual(pages.flat(), [...wanted].reverse());
      assert.equal((await walk(session, { tool: 'crm.update?' })).flat().length, 230);
    });

    test('bad URLs get a clear 400 page that quotes nothing, lists nothing and changes nothing', async () => {
      const { workspace, key } = await t.workspace();
      const id = await submit(key, { tool_name: 'payments.charge' });
      const session = await app.signIn(workspace, 'admin@acme.test');
      const snapshot = await t.service.ctx.db.all('SELECT id, status, created_at FROM holds ORDER BY id');
      const marker = 'QUOTEDVALUE';
      const cases: [string, RegExp][] = [
        [`tool=${marker}${'x'.repeat(200)}`, /Tool: at most 200 characters\./],
        [`agent=${marker}${'x'.repeat(5000)}`, /Agent: at most 200 characters\./],
        [`tool=${marker}%00`, /Tool: contains a NUL character\./],
        [`status=${marker}`, /Status: not one of the statuses listed\./],
        [`from=${marker}`, /From: not a day/],
        ['to=2024-02-31', /To: not a day/],
        [`before=${marker}`, /Page: the link to this page is not valid/],
        [`after=1_${marker}`, /Page: the link to this page is not valid/],
        [`before=1_svc_pa_${marker}%3Cscript%3E`, /Page: the link to this page is not valid/],
        [`before=99999999999999999_svc_pa_${marker}`, /Page: the link to this page is not valid/],
        [`before=-5_svc_pa_${marker}`, /Page: the link to this page is not valid/],
        [`before=1_svc_pa_${marker}&after=1_svc_pa_${marker}`, /Page: a page is either newer or older/],
        [`before=1_svc_pa_${marker}&before=2_svc_pa_${marker}`, /Page: given more than once\./],
        [`tool=a&tool=${marker}`, /Tool: given more than once\./],
      ];
      for (const [query, message] of cases) {
        const page = await history(session, query);
        assert.equal(page.status, 400, query);
        assert.match(page.text, /This history page cannot be shown/, query);
        assert.match(page.text, message, query);
        assert.ok(!page.text.includes(marker), `${query}: the value is not quoted`);
        assert.deepEqual(idsOf(page), [], `${query}: no holds listed`);
      }
      // The filters that were understood stay, in the form and in the way out.
      const mixed = await history(session, { tool: 'payments.*', status: 'nope' });
      assert.equal(mixed.status, 400);
      assert.equal(formValue(mixed, 'tool'), 'payments.*');
      assert.equal(formValue(mixed, 'agent'), '');
      assert.match(mixed.text, /<a href="\/app\/history\?tool=payments\.\*">/);
      assert.deepEqual(
        await t.service.ctx.db.all('SELECT id, status, created_at FROM holds ORDER BY id'),
        snapshot,
      );

      // Odd but well-formed filters are no error: they match what they say (here, nothing).
      for (const tool of [
        '%',
        '_',
        '\\',
        '[a-z]*',
        "'; DROP TABLE holds; --",
        '<script>x</script>',
        '***?***',
      ]) {
        const page = await history(session, { tool });
        assert.equal(page.status, 200, tool);
        assert.ok(!page.text.includes('<script>x'), tool);
      }
      assert.deepEqual(idsOf(await history(session, { tool: '***?***' })), [id]);
      assert.deepEqual(idsOf(await history(session, { tool: '%' })), []);
      // An empty cursor is no cursor.
      assert.deepEqual(idsOf(await history(session, 'before=&after=')), [id]);
    });
  });
}
