/**
 * Issue 37, part 4: the full decision page cannot hide the payee. A 30,000-character memo written
 * before `amount` and `iban` once pushed both off the decision link's page and the hold's page ("2
 * values and 10051 characters left out") while Approve was offered. Every value stays on the page (long
 * text folded in place, its length said), the values the rule looked at come first, and a hold too large
 * to show whole gets no Approve, there or through a form sent anyway. The widget reviews on the same page.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { mintEmbedToken } from '../src/services/channel-decisions.ts';
import { mintDecisionLink } from '../src/services/decision-links.ts';
import { findHold } from '../src/store/holds.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, type Session, unescapeHtml } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { startTestService, type TestService } from './support/service.ts';

const CONFIG = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: bob@acme.test, name: Bob, role: approver }
tools:
  - { connection: SDK, tool: transfer, classification: approval }
rules:
  - name: Large transfers
    tool: transfer
    effect: approval
    approvers: [bob@acme.test, admin@acme.test]
    when:
      - { arg: amount, op: gt, value: 1000 }
`;

const IBAN = 'DE89370400440532013000';

for (const backend of backends) {
  describe(`every value on the decision page on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let workspace: Workspace;
    let key: string;
    let admin: Session;
    const app = appClient(() => t);

    before(async () => {
      t = await startTestService(backend);
      ({ workspace, key } = await t.workspace({ config: CONFIG }));
      admin = await app.signIn(workspace, 'admin@acme.test');
    });
    after(() => t?.close());

    const transfer = (memo: string) => held({ memo, amount: 250_000, iban: IBAN });

    async function held(args: Record<string, unknown>) {
      const answer = await call(t.url, 'POST', '/api/v1/holds', {
        key,
        body: submission({ tool_name: 'transfer', arguments: args }),
      });
      assert.equal(answer.status, 201, answer.text);
      assert.equal(answer.body.status, 'pending');
      return answer.body.id as string;
    }

    async function linkFor(id: string, email: string) {
      const hold = (await findHold(t.service.ctx.db, workspace.id, id))!;
      const member = (await findMemberByEmail(t.service.ctx.db, workspace.id, email))!;
      return new URL(await mintDecisionLink(t.service.ctx, { hold, memberId: member.id, channel: 'email' }))
        .pathname;
    }

    const approveOffered = (page: string) => /<button[^>]*name="verdict" value="approve"/.test(page);
    const rejectOffered = (page: string) => /<button[^>]*name="verdict" value="reject"/.test(page);

    test('a 30,000-character memo before the amount and the IBAN: all three on the page, amount first', async () => {
      const memo = 'm'.repeat(30_000);
      const id = await transfer(memo);
      const pages = {
        link: (await app.get(null, await linkFor(id, 'bob@acme.test'))).text,
        hold: (await app.get(admin, `/app/holds/${id}`)).text,
      };
      for (const [name, page] of Object.entries(pages)) {
        const text = unescapeHtml(page);
        assert.ok(text.includes(IBAN), `${name}: the IBAN is on the page`);
        assert.ok(text.includes(`"${memo}"`), `${name}: the memo is on the page whole`);
        assert.doesNotMatch(text, /left out/, name);
        // Folded in place with its length, no script needed to open it.
        assert.match(page, /<details[^>]*>\s*<summary>[^]*?memo[^]*?30,002 characters[^]*?<\/summary>/, name);
        // The rule looked at the amount: it comes first, marked.
        const args = page.slice(page.indexOf('class="args"'));
        assert.ok(args.indexOf('250000') < args.indexOf('>memo<'), `${name}: amount before memo`);
        assert.ok(approveOffered(page), `${name}: Approve offered, everything is on the page`);
      }
    });

    test('a memo too long for any page: the IBAN is still shown, Approve is not offered nor accepted', async () => {
      const memo = 'm'.repeat(200_000);
      const id = await transfer(memo);
      const linkPath = await linkFor(id, 'bob@acme.test');
      const pages = {
        link: (await app.get(null, linkPath)).text,
        hold: (await app.get(admin, `/app/holds/${id}`)).text,
      };
      for (const [name, page] of Object.entries(pages)) {
        assert.ok(page.length < 100_000, `${name}: ${page.length} characters`);
        assert.ok(page.includes(IBAN), `${name}: the IBAN is on the page`);
        assert.match(page, /200,002 characters/, name);
        assert.match(page, /Download the full JSON/, name);
        assert.ok(!approveOffered(page), `${name}: no Approve beside a value nobody can see`);
        assert.ok(rejectOffered(page), `${name}: Reject stays`);
        assert.match(page, /Approve is not offered/, name);
      }
      // A form sent anyway changes nothing.
      const viaLink = await app.post(null, linkPath, { verdict: 'approve' });
      assert.equal(viaLink.status, 422);
      const viaApp = await app.post(admin, `/app/holds/${id}/decide`, {
        verdict: 'approve',
        back: '/app/inbox',
      });
      assert.equal(viaApp.status, 422);
      const record = await call(t.url, 'GET', `/api/v1/holds/${id}`, { key });
      assert.equal(record.body.status, 'pending');
      // Rejecting it is possible.
      const rejected = await app.post(admin, `/app/holds/${id}/decide`, {
        verdict: 'reject',
        back: '/app/inbox',
      });
      assert.equal(rejected.status, 303);
      assert.equal((await call(t.url, 'GET', `/api/v1/holds/${id}`, { key })).body.status, 'rejected');
    });

    /** Both pages of a hold: its decision link's and the app's. */
    const pagesOf = async (id: string) => ({
      link: (await app.get(null, await linkFor(id, 'bob@acme.test'))).text,
      hold: (await app.get(admin, `/app/holds/${id}`)).text,
    });
    /** The arguments' `<details>` that are closed when the page opens, but for folded long texts. */
    const closedBranches = (page: string) =>
      [...page.slice(page.indexOf('class="args"')).matchAll(/<details([^>]*)>/g)]
        .map((tag) => tag[1]!)
        .filter((attrs) => !/\bopen\b|class="long"/.test(attrs));

    test('an IBAN and an amount nested five levels deep: on the page as it opens, with Approve', async () => {
      const id = await held({
        invoice: { lines: { payment: { beneficiary: { iban: IBAN, amount: 250_000 } } } },
      });
      for (const [name, page] of Object.entries(await pagesOf(id))) {
        assert.ok(page.includes(IBAN) && page.includes('250000'), name);
        assert.deepEqual(closedBranches(page), [], `${name}: no level closed`);
        assert.ok(approveOffered(page), name);
      }
    });

    test('an IBAN padded with 190 spaces: its folded line shows the IBAN and counts the spaces', async () => {
      const id = await held({ amount: 250_000, iban: `${' '.repeat(190)}${IBAN}` });
      for (const [name, page] of Object.entries(await pagesOf(id))) {
        const line = page.slice(page.indexOf('>iban<'));
        const summary = line.slice(0, line.indexOf('</summary>'));
        assert.match(summary, /190 spaces/, name);
        assert.ok(summary.includes(IBAN), `${name}: the IBAN on its folded line`);
        assert.match(summary, /214 characters/, name);
      }
    });

    test('the widget sends a hold it cannot show to the same page, where the IBAN is', async () => {
      const id = await transfer('m'.repeat(30_000));
      const bob = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'bob@acme.test'))!;
      const { token } = await mintEmbedToken(t.service.ctx, bob);
      const listed = await call(t.url, 'GET', '/widget/api/holds', { key: token });
      const hold = listed.body.holds.find((h: { id: string }) => h.id === id);
      assert.equal(hold.complete, false);
      assert.equal(hold.review_url, `${t.url}/app/holds/${id}`);
      const bobSession = await app.signIn(workspace, 'bob@acme.test');
      const page = await app.get(bobSession, new URL(hold.review_url).pathname);
      assert.ok(page.text.includes(IBAN));
      assert.ok(approveOffered(page.text));
    });
  });
}
