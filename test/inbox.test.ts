/**
 * The inbox on both backends, through HTTP as a member: filters and paging in the URL, the deadline
 * and newest orders, what changed since a page was drawn, the count past 500 holds, the widget's list,
 * summaries of holds stored before migration 015, and bad URLs refused without an echo.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { claimHold } from '../src/services/claims.ts';
import { SEARCHED_ARGUMENTS_SIZE } from '../src/store/hold-lines.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { type AppClient, appClient, type Session } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { seedHolds } from './support/seed.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: sam@acme.test, name: Sam Second, role: admin }
  - { email: fin@acme.test, name: Fin Ance, role: approver }
groups: { finance: [fin@acme.test, sam@acme.test] }
tools:
  - { connection: SDK, tool: payments.transfer, classification: approval }
  - { connection: SDK, tool: payments.refund, classification: approval }
  - { connection: GitHub, tool: github.merge, classification: approval }
rules:
  - { name: Transfers, tool: payments.transfer, effect: approval, approvers: ["group:finance", "role:admin"], approvals_required: 2, timeout_minutes: 600 }
  - { name: Merges, tool: github.merge, effect: approval, timeout_minutes: 30 }
`;

/** The hold ids of the inbox's lines, in order. */
const linesOf = (text: string) => [...text.matchAll(/ id="line-(svc_pa_[\w-]+)"/g)].map((m) => m[1]);
const hrefOf = (text: string, rel: 'next' | 'prev') =>
  text.match(new RegExp(`<a href="([^"]+)" rel="${rel}">`))?.[1]?.replaceAll('&amp;', '&') ?? null;

for (const backend of backends) {
  describe(`the inbox on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let app: AppClient;
    let workspace: Workspace;
    let ada: Session;
    const ids = { transfers: [] as string[], refunds: [] as string[], merges: [] as string[] };

    before(async () => {
      t = await startTestService(backend);
      app = appClient(t);
      ({ workspace } = await t.workspace({ config: WORKSPACE }));
      const ctx = t.service.ctx;
      // 60 transfers (deadline in 10 h), 60 refunds (default deadline), 5 merges (30 min) by a labelled bot.
      ids.transfers = await seedHolds(ctx, workspace, 60, (i) => {
        t.clock.advance(1_000);
        return {
          toolName: 'payments.transfer',
          arguments: { amount: 1000 + i, iban: 'DE89370400440532013000' },
        };
      });
      ids.refunds = await seedHolds(ctx, workspace, 60, (i) => {
        t.clock.advance(1_000);
        return {
          toolName: 'payments.refund',
          arguments: { amount: i },
          agent: { id: 'refund-bot', label: null },
        };
      });
      ids.merges = await seedHolds(ctx, workspace, 5, (i) => {
        t.clock.advance(1_000);
        return {
          connection: 'GitHub',
          toolName: 'github.merge',
          arguments: { pull: i },
          agent: { id: 'release-7', label: 'Release bot' },
        };
      });
      ada = await app.signIn(workspace, 'admin@acme.test');
    });
    after(() => t?.close());

    test('deadline soonest first by default, 50 a page, later and earlier pages exact at their edges', async () => {
      const first = await app.get(ada, '/app/inbox');
      assert.equal(first.status, 200);
      const page1 = linesOf(first.text);
      assert.equal(page1.length, 50);
      assert.deepEqual(page1.slice(0, 5), ids.merges, 'the 30-minute deadlines come first');
      assert.match(first.text, /Waiting for you <span class="badge">125<\/span>/);
      assert.equal(hrefOf(first.text, 'prev'), null);
      const second = await app.get(ada, hrefOf(first.text, 'next')!);
      const page2 = linesOf(second.text);
      const third = await app.get(ada, hrefOf(second.text, 'next')!);
      const page3 = linesOf(third.text);
      assert.equal(page3.length, 25);
      assert.equal(hrefOf(third.text, 'next'), null);
      const all = [...page1, ...page2, ...page3];
      assert.equal(new Set(all).size, 125, 'no hold twice, none lost');
      const back = await app.get(ada, hrefOf(third.text, 'prev')!);
      assert.deepEqual(linesOf(back.text), page2);

      const newest = linesOf((await app.get(ada, '/app/inbox?order=newest')).text);
      assert.equal(newest[0], ids.merges[4]);
    });

    test('filters stay in the URL: tool glob, connection, agent by id or label, rule, environment, search', async () => {
      const only = async (query: string) => linesOf((await app.get(ada, `/app/inbox?${query}`)).text);
      assert.deepEqual(new Set(await only('tool=payments.*&order=newest')).size, 50);
      assert.deepEqual(await only('tool=github.m%3Frge'), ids.merges);
      assert.deepEqual(await only('connection=GitHub'), ids.merges);
      assert.deepEqual(await only('agent=Release%20bot'), ids.merges);
      assert.deepEqual(await only('agent=release-7'), ids.merges);
      assert.deepEqual(await only('rule=Merges'), ids.merges);
      assert.equal((await only('env=test')).length, 0);
      assert.deepEqual(await only(`q=${ids.merges[2]}`), [ids.merges[2]]);
      assert.deepEqual(await only('q=RELEASE'), ids.merges, 'search ignores case');
      // Paging keeps the filter.
      const refunds = await app.get(ada, '/app/inbox?tool=payments.refund');
      const next = hrefOf(refunds.text, 'next')!;
      assert.match(next, /tool=payments.refund/);
      assert.deepEqual([...linesOf(refunds.text), ...linesOf((await app.get(ada, next)).text)], ids.refunds);
      // The heading counts what waits, as the header does; the range counts what matches.
      assert.match(refunds.text, /Waiting for you <span class="badge">125<\/span>/);
      assert.match(refunds.text, /id="pending-count"[^>]*>125</);
      assert.match(refunds.text, /<p class="range">1–50 of 60 matching<\/p>/);
      assert.match(
        (await app.get(ada, '/app/inbox?tool=nothing*')).text,
        /No waiting hold matches these filters/,
      );
    });

    test('each line: tool, connection, summary, agent, rule, approvals so far and the deadline', async () => {
      await decideAs(t, workspace.id, ids.transfers[0]!, 'approve', 'sam@acme.test', 'ok');
      const text = (await app.get(ada, `/app/inbox?tool=payments.transfer&q=${ids.transfers[0]}`)).text;
      const line = text.slice(text.indexOf(`id="line-${ids.transfers[0]}"`));
      assert.match(
        line,
        /<strong class="tool">payments.transfer<\/strong>\s+<span class="muted">SDK<\/span>/,
      );
      assert.match(line, /amount=1000, iban=&quot;DE89370400440532013000&quot;/);
      assert.match(line, /Billing bot/);
      assert.match(line, /Transfers/);
      assert.match(line, /1 of 2 · Sam Second/);
      assert.match(line, /<time class="countdown short" datetime=/);
    });

    test('bad URLs get a clear 400 page that echoes nothing', async () => {
      for (const query of [
        `tool=${'x'.repeat(201)}`,
        'order=sideways',
        'page=<script>',
        'page=0',
        'env=prod',
        'hold=../../etc',
      ]) {
        const page = await app.get(ada, `/app/inbox?${query}`);
        assert.equal(page.status, 400, query);
        assert.match(page.text, /not understood/);
        assert.ok(
          !page.text.includes('<script>') && !page.text.includes('sideways') && !page.text.includes('xxxx'),
        );
      }
    });

    test('what changed since a page was drawn: arrivals, holds decided elsewhere, approvals so far', async () => {
      const drawn = t.service.ctx.now();
      const shown = [ids.refunds[0]!, ids.refunds[1]!, ids.transfers[1]!];
      await decideAs(t, workspace.id, ids.refunds[0]!, 'reject', 'sam@acme.test', 'no');
      await decideAs(t, workspace.id, ids.transfers[1]!, 'approve', 'fin@acme.test', null);
      t.clock.advance(1_000);
      await seedHolds(t.service.ctx, workspace, 2, () => ({ toolName: 'payments.refund', arguments: {} }));
      await seedHolds(t.service.ctx, workspace, 1, () => ({
        connection: 'GitHub',
        toolName: 'github.merge',
      }));
      const changes = await app.get(
        ada,
        `/app/inbox/changes?shown=${shown.join(',')}&since=${drawn}&tool=payments.refund`,
      );
      assert.equal(changes.status, 200);
      const body = JSON.parse(changes.text);
      assert.equal(body.arrived, 2, 'only the arrivals that match the filter');
      assert.deepEqual(body.left, [
        { id: ids.refunds[0], status: 'rejected', note: 'Rejected by Sam Second' },
      ]);
      assert.deepEqual(body.approvals, [
        { id: ids.transfers[1], received: 1, required: 2, names: 'Fin Ance' },
      ]);
      assert.equal(typeof body.waiting, 'number');
      assert.equal((await app.get(ada, '/app/inbox/changes?shown=x&since=soon')).status, 400);
    });

    test('a decision returns to the list it was made from, the next hold selected; never to another site', async () => {
      const [one, two, three] = await seedHolds(t.service.ctx, workspace, 3, () => ({
        connection: 'GitHub',
        toolName: 'github.merge',
        agent: { id: 'return-test', label: null },
      }));
      const back = '/app/inbox?agent=return-test&order=newest';
      const decided = await app.post(ada, `/app/holds/${two}/decide`, {
        verdict: 'approve',
        back,
        next: one!,
      });
      assert.equal(decided.status, 303);
      assert.equal(decided.location, `/app/inbox?agent=return-test&order=newest&hold=${one}`);
      assert.equal(decided.notice, 'approved', 'what became of it is a flash notice, not in the URL');
      for (const target of [
        'https://evil.test/app/inbox',
        '//evil.test/app/inbox',
        '/\\evil.test',
        'javascript:alert(1)',
      ]) {
        const page = await app.post(ada, `/app/holds/${three}/decide`, { verdict: 'reject', back: target });
        assert.equal(page.status, 303, target);
        assert.match(page.location!, /^\/app\/inbox(\?|$)/, target);
      }
      // A hold decided meanwhile: back to it, with a notice saying so.
      const again = await app.post(ada, `/app/holds/${two}/decide`, {
        verdict: 'reject',
        back,
        next: three!,
      });
      assert.equal(again.location, `/app/inbox?agent=return-test&order=newest&hold=${two}`);
      const shown = await app.follow(ada, again);
      assert.match(shown.text, /that hold was decided or expired before your answer/);
      // Said once: the same page again does not repeat it.
      assert.doesNotMatch(
        (await app.get(ada, again.location!)).text,
        /decided or expired before your answer/,
      );
      assert.match(shown.text, new RegExp(`id="hold-${two}"`));
    });

    test('a hold with a hundred long approvers is submitted and listed (no index entry too large)', async () => {
      const approvers = Array.from({ length: 99 }, (_, i) => `approver-${i}-${'x'.repeat(40)}@acme.test`);
      const members = approvers.map((email, i) => `  - { email: ${email}, name: A${i}, role: approver }`);
      const { workspace: wide } = await t.workspace({
        config: [
          'members:',
          '  - { email: admin@acme.test, name: Ada Admin, role: admin }',
          ...members,
          'rules:',
          `  - { name: Wide, tool: wide, effect: approval, approvers: ${JSON.stringify(['role:admin', ...approvers])} }`,
          '',
        ].join('\n'),
      });
      const [id] = await seedHolds(t.service.ctx, wide, 1, () => ({ toolName: 'wide', arguments: { n: 1 } }));
      const admin = await app.signIn(wide, 'admin@acme.test');
      assert.deepEqual(linesOf((await app.get(admin, '/app/inbox')).text), [id]);
    });

    test('a refused decision shows its problem with the count of what waits, as every page does', async () => {
      const fin = await app.signIn(workspace, 'fin@acme.test');
      const inbox = await app.get(fin, '/app/inbox');
      const count = inbox.text.match(/id="pending-count"[^>]*>(\d+)</)![1];
      assert.ok(Number(count) > 0);
      const refused = await app.post(fin, `/app/holds/${ids.merges[0]}/decide`, { verdict: 'approve' });
      assert.equal(refused.status, 403);
      assert.match(refused.text, /not among the approvers/);
      assert.match(refused.text, new RegExp(`id="pending-count"[^>]*>${count}<`));
      // Pages that cannot count (a problem found before a session is read) leave it to the script.
      const unknown = await app.get(fin, '/app/inbox?order=sideways');
      assert.match(unknown.text, /id="pending-count"[^>]*hidden/);
    });

    test('a hold with a megabyte of context: its page shows a bounded part', async () => {
      const [id] = await seedHolds(t.service.ctx, workspace, 1, () => ({
        toolName: 'payments.refund',
        arguments: { amount: 1 },
        context: { ticket: 'T-1', transcript: 'y'.repeat(1_000_000) },
      }));
      const page = await app.get(ada, `/app/holds/${id}`);
      assert.equal(page.status, 200);
      assert.ok(page.text.length < 100_000, `${page.text.length} characters`);
      assert.match(page.text, /&quot;T-1&quot;/);
      assert.match(page.text, /Too large to show whole/);
    });

    test('the count past 500 holds, and a hold stored before summaries were kept', async () => {
      const { workspace: big } = await t.workspace({ config: WORKSPACE });
      await seedHolds(t.service.ctx, big, 520, (i) => ({ toolName: 'payments.refund', arguments: { i } }));
      // As a row written before migration 015 looks: no summary, no size.
      const [legacy] = await seedHolds(t.service.ctx, big, 1, () => ({
        toolName: 'payments.refund',
        arguments: { customer: 'Globex', amount: 12 },
      }));
      await t.service.ctx.db.run(
        'UPDATE holds SET arguments_summary = NULL, arguments_size = NULL WHERE id = $1',
        [legacy],
      );
      const admin = await app.signIn(big, 'admin@acme.test');
      const page = await app.get(admin, `/app/inbox?q=${legacy}`);
      assert.match(page.text, /id="pending-count"[^>]*>521</, 'every pending hold is counted');
      assert.match(page.text, /customer=&quot;Globex&quot;, amount=12/);
    });
  });
}

/** Payments as an approver with hundreds of holds sees them: the rule's values, why each is theirs. */
const PAYMENTS = (now: number) => `members:
  - { email: ada@acme.test, name: Ada Admin, role: admin }
  - { email: sam@acme.test, name: Sam Second, role: admin }
  - email: ann@acme.test
    name: Ann
    role: approver
    delegate: { to: dan@acme.test, from: '${new Date(now - 60_000).toISOString()}', until: '${new Date(now + 8 * 3_600_000).toISOString()}' }
  - { email: dan@acme.test, name: Dan, role: approver }
  - { email: olga@acme.test, name: Olga, role: approver }
tools:
  - { connection: SDK, tool: payments.send, classification: approval }
  - { connection: SDK, tool: payouts.send, classification: approval }
rules:
  - { name: Large payments, tool: payments.send, when: [{ arg: payee, op: ne, value: Self }, { arg: amount, op: gt, value: 1000 }], effect: approval, approvers: ["role:admin"], approvals_required: 2, timeout_minutes: 600 }
  - { name: Payouts, tool: payouts.send, effect: approval, approvers: [ann@acme.test, ada@acme.test], timeout_minutes: 120, escalate: { after: 15m, to: [olga@acme.test] } }
`;

/** The text of one line of the inbox, tags out. */
const lineText = (page: string, id: string) => {
  const from = page.indexOf(`id="line-${id}"`);
  assert.ok(from >= 0, `line ${id} shown`);
  const html = page.slice(from, page.indexOf('</li>', from));
  return html
    .replace(/<[^>]+>/g, ' ')
    .replaceAll('&quot;', '"')
    .replace(/\s+/g, ' ');
};

for (const backend of backends) {
  describe(
    `the inbox list's values, reasons, search and pages on ${backend.name}`,
    { skip: backend.skip },
    () => {
      let t: TestService;
      let app: AppClient;
      let workspace: Workspace;
      let ada: Session;
      const payments: string[] = [];
      const memo = 'Quarterly settlement as agreed in the framework contract '.repeat(4);

      before(async () => {
        t = await startTestService(backend);
        app = appClient(t);
        ({ workspace } = await t.workspace({ config: PAYMENTS(t.clock.now()) }));
        payments.push(
          ...(await seedHolds(t.service.ctx, workspace, 120, (i) => ({
            toolName: 'payments.send',
            arguments: {
              memo,
              reference: `INV-${i}`,
              iban: 'DE89370400440532013000',
              payee: i === 7 ? 'Globex Corporation' : `Supplier ${i}`,
              currency: 'EUR',
              amount: 31_000 + i,
            },
          }))),
        );
        ada = await app.signIn(workspace, 'ada@acme.test');
      });
      after(() => t?.close());

      test('a line shows the values the rule looks at first, then money, never a memo before the amount', async () => {
        const page = await app.get(ada, `/app/inbox?q=${payments[7]}`);
        const text = lineText(page.text, payments[7]!);
        assert.match(
          text,
          /payee="Globex Corporation", amount=31007, currency="EUR", iban="DE89370400440532013000", /,
        );
        assert.ok(text.indexOf('amount=') < text.indexOf('memo='), text);
        assert.match(
          page.text,
          /data-values="payee=&quot;Globex Corporation&quot;, amount=31007, currency=&quot;EUR&quot;, iban=/,
        );
      });

      test('each line says why it is the reader’s: approver of the rule, a four-eyes second, a new tool, for a member away, escalated', async () => {
        assert.match(
          lineText((await app.get(ada, `/app/inbox?q=${payments[1]}`)).text, payments[1]!),
          /approver of Large payments/,
        );
        await decideAs(t, workspace.id, payments[2]!, 'approve', 'sam@acme.test', 'ok');
        assert.match(
          lineText((await app.get(ada, `/app/inbox?q=${payments[2]}`)).text, payments[2]!),
          /second approval \(four-eyes\)/,
        );
        const [fresh] = await seedHolds(t.service.ctx, workspace, 1, () => ({ toolName: 'never.seen' }));
        assert.match(lineText((await app.get(ada, `/app/inbox?q=${fresh}`)).text, fresh!), /admin: new tool/);
        const [payout] = await seedHolds(t.service.ctx, workspace, 1, () => ({
          toolName: 'payouts.send',
          arguments: { amount: 5 },
        }));
        const dan = await app.signIn(workspace, 'dan@acme.test');
        assert.match(lineText((await app.get(dan, '/app/inbox')).text, payout!), /for Ann, away/);
        await t.clock.advance(15 * 60_000);
        const olga = await app.signIn(workspace, 'olga@acme.test');
        const escalated = (await app.get(olga, '/app/inbox')).text;
        assert.match(lineText(escalated, payout!), /escalated to you/);
        assert.match(escalated, /<span class="why" data-why="escalated">escalated to you at <time datetime=/);
      });

      test('search finds argument values, tool, agent and reference, any case; tool and agent filters take a part', async () => {
        const only = async (query: string) => linesOf((await app.get(ada, `/app/inbox?${query}`)).text);
        assert.deepEqual(await only('q=globex'), [payments[7]]);
        assert.deepEqual(await only('q=INV-42'), [payments[42]]);
        assert.deepEqual(await only('q=Globex%20corporation'), [payments[7]]);
        assert.equal((await only('q=de89370400440532013000&tool=payments')).length, 50);
        assert.deepEqual(await only('q=globex%20nothing'), [], 'every word must be found');
        assert.deepEqual(await only('q=100%25'), [], 'a % is literal');
        assert.deepEqual(await only(`q=${payments[3]!.slice(4, 20).toLowerCase()}`), [payments[3]]);
        assert.equal((await only('tool=MENTS.se&q=globex')).length, 1);
        assert.equal((await only('tool=payments.*&q=globex')).length, 1);
        assert.equal((await only('agent=illing&q=globex')).length, 1);
        assert.equal((await only('agent=nobody&q=globex')).length, 0);
        // Long arguments are searched by their summary: the rule's values and money, not a memo's end.
        const [long] = await seedHolds(t.service.ctx, workspace, 1, () => ({
          toolName: 'payouts.send',
          arguments: { memo: `${'z'.repeat(SEARCHED_ARGUMENTS_SIZE)} Hidden`, payee: 'Initech', amount: 5 },
        }));
        assert.deepEqual(await only('q=initech'), [long]);
        assert.deepEqual(await only('q=hidden'), []);
      });

      test('counts and pages: 1–50 of N, numbered pages around this one, first and last; past the last, the last', async () => {
        const first = await app.get(ada, '/app/inbox?tool=payments.send');
        assert.match(first.text, /<p class="range">1–50 of 120 matching<\/p>/);
        assert.match(first.text, /<span aria-current="page">1<\/span>/);
        assert.equal(hrefOf(first.text, 'prev'), null);
        assert.equal(hrefOf(first.text, 'next'), '/app/inbox?tool=payments.send&page=2');
        assert.match(first.text, /<a href="\/app\/inbox\?tool=payments.send&amp;page=3" >Last »<\/a>/);
        const third = await app.get(ada, '/app/inbox?tool=payments.send&page=3');
        assert.match(third.text, /<p class="range">101–120 of 120 matching<\/p>/);
        assert.equal(linesOf(third.text).length, 20);
        assert.equal(hrefOf(third.text, 'next'), null);
        assert.match(third.text, /<a href="\/app\/inbox\?tool=payments.send" >« First<\/a>/);
        const all = [first, await app.get(ada, hrefOf(first.text, 'next')!), third].flatMap((page) =>
          linesOf(page.text),
        );
        assert.equal(new Set(all).size, 120, 'no hold twice, none lost');
        assert.match(
          (await app.get(ada, '/app/inbox?tool=payments.send&page=40')).text,
          /101–120 of 120 matching/,
        );
        // The heading and the header count the same: what waits for the reader.
        const waiting = first.text.match(/id="pending-count"[^>]*>(\d+)</)![1];
        assert.match(first.text, new RegExp(`Waiting for you <span class="badge">${waiting}</span>`));
      });

      test('changes say when an arrival is due sooner than anything listed', async () => {
        const drawn = t.service.ctx.now();
        const shown = linesOf((await app.get(ada, '/app/inbox?tool=payments.send')).text);
        const changes = async () =>
          JSON.parse((await app.get(ada, `/app/inbox/changes?shown=${shown.join(',')}&since=${drawn}`)).text);
        assert.equal((await changes()).due_sooner, false);
        t.clock.advance(1_000);
        await seedHolds(t.service.ctx, workspace, 1, () => ({
          toolName: 'payments.send',
          arguments: { amount: 5000, payee: 'Later' },
        }));
        const later = await changes();
        assert.deepEqual([later.arrived, later.due_sooner], [1, false], 'due after the listed ones');
        await seedHolds(t.service.ctx, workspace, 1, () => ({
          toolName: 'payouts.send',
          arguments: { amount: 2 },
        }));
        const sooner = await changes();
        assert.deepEqual(
          [sooner.arrived, sooner.due_sooner],
          [2, true],
          'a payout is due in 2 h, the payments in 10 h',
        );
      });

      test('each line has a checkbox for the bulk form, which carries the filter, back and CSRF', async () => {
        const page = (await app.get(ada, '/app/inbox?tool=payments.send&q=globex')).text;
        assert.match(page, /<form id="bulk" method="post" action="\/app\/inbox\/bulk" class="bulk-bar">/);
        const form = page.slice(
          page.indexOf('<form id="bulk"'),
          page.indexOf('</form>', page.indexOf('<form id="bulk"')),
        );
        assert.match(form, /name="_csrf" value="[\w-]+"/);
        assert.match(form, /<input type="hidden" name="tool" value="payments.send" \/>/);
        assert.match(form, /<input type="hidden" name="q" value="globex" \/>/);
        assert.match(form, /name="back" value="\/app\/inbox\?tool=payments.send&amp;q=globex"/);
        assert.match(form, /name="verdict" value="approve">Approve selected…/);
        assert.match(form, /name="verdict" value="reject">Reject selected…/);
        assert.match(form, /name="all" value="1"[^>]*>\s*Select all 1 matching this filter/);
        const box = page.match(/<input\s+type="checkbox"\s+class="pick"[^>]+>/)![0];
        assert.match(box, new RegExp(`value="${payments[7]}"`));
        assert.match(box, /form="bulk"/);
        assert.match(
          box,
          /aria-label="Select payments.send payee=&quot;Globex Corporation&quot;, amount=31007/,
        );
        // Outside the line's link.
        assert.ok(
          page.indexOf(box) <
            page.indexOf(`<a href="/app/inbox?tool=payments.send&amp;q=globex&amp;hold=${payments[7]}"`),
        );
      });

      test('a line claimed by a member says who is on it', async () => {
        const sam = (await t.service.ctx.db.one<{ id: string }>(
          'SELECT id FROM members WHERE workspace_id = $1 AND email = $2',
          [workspace.id, 'sam@acme.test'],
        ))!;
        await claimHold(t.service.ctx, {
          workspaceId: workspace.id,
          holdId: payments[20]!,
          memberId: sam.id,
        });
        const page = (await app.get(ada, `/app/inbox?q=${payments[20]}`)).text;
        assert.match(page, /data-claimed-by="Sam Second"/);
        assert.match(lineText(page, payments[20]!), /Sam Second is on it/);
        assert.doesNotMatch(lineText(page, payments[20]!), /undefined|null/);
      });

      test('a decision asked for as JSON answers JSON: what became of it, or why not', async () => {
        const json = (session: Session, id: string, fields: Record<string, string>) =>
          app.post(session, `/app/holds/${id}/decide`, fields, undefined, { Accept: 'application/json' });
        const decided = await json(ada, payments[10]!, { verdict: 'reject', next: payments[11]! });
        assert.equal(decided.status, 200);
        assert.deepEqual(JSON.parse(decided.text), {
          outcome: 'recorded',
          status: 'rejected',
          notice: 'Rejected.',
          next: payments[11],
        });
        const again = await json(ada, payments[10]!, { verdict: 'reject' });
        assert.equal(
          JSON.parse(again.text).notice,
          'Not decided: that hold was decided or expired before your answer.',
        );
        const olga = await app.signIn(workspace, 'olga@acme.test');
        const refused = await json(olga, payments[11]!, { verdict: 'approve' });
        assert.equal(refused.status, 403);
        assert.deepEqual(JSON.parse(refused.text), {
          error: 'not_decided',
          message: 'You are not among the approvers of this hold.',
        });
        const bad = await json(ada, payments[11]!, { verdict: 'maybe' });
        assert.deepEqual([bad.status, JSON.parse(bad.text).error], [400, 'not_understood']);
        // The form path is unchanged: a redirect with a notice.
        const form = await app.post(ada, `/app/holds/${payments[12]}/decide`, { verdict: 'reject' });
        assert.equal(form.status, 303);
      });
    },
  );
}
