/**
 * Issue 37, part 2: decisions signed by the approver's passkey, in Chromium with a virtual authenticator
 * (Chrome DevTools Protocol, WebAuthn domain), on both backends. Members enrol a passkey and sign in with
 * it; a rule with `signed: true` needs each approval to carry an assertion over the hash of the exact
 * action; an assertion replayed on another hold, or made before an argument was changed, is refused; the
 * evidence of a signed four-eyes decision verifies offline, with the SDK and with `approvals verify`.
 * The relying party is PUBLIC_URL's host, so the service is reached as http://localhost:<port>.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { EvidenceEntry } from '../packages/sdk/src/chain.ts';
import { verifySignedDecision, verifySignedDecisions } from '../packages/sdk/src/signed-decision.ts';
import { mintDecisionLink } from '../src/services/decision-links.ts';
import { exportEvidence } from '../src/services/export-evidence.ts';
import { inviteLink } from '../src/services/sign-in.ts';
import { findHold } from '../src/store/holds.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, type Session } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { browserSkip, closeBrowser, launchBrowser, openPage, type TestPage } from './support/browser.ts';
import { approvals, ROOT } from './support/cli.ts';
import { call, submission } from './support/http.ts';
import { startTestService, type TestService } from './support/service.ts';
import { startSmtp, type TestSmtp } from './support/smtp.ts';
import { until } from './support/wait.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: ann@acme.test, name: Ann Approver, role: approver }
  - { email: bob@acme.test, name: Bob Approver, role: approver }
  - { email: carl@acme.test, name: Carl Clerk, role: approver }
tools:
  - { connection: SDK, tool: transfer, classification: approval }
  - { connection: SDK, tool: payout, classification: approval }
rules:
  - name: Transfers
    tool: transfer
    effect: approval
    approvers: [ann@acme.test, bob@acme.test]
    approvals_required: 2
    signed: true
  - name: Payouts
    tool: payout
    when: [{ arg: amount, op: lte, value: 5000 }]
    effect: approval
    approvers: [ann@acme.test, bob@acme.test]
    approvals_required: 2
    signed: true
    editable: [amount]
`;

const TRANSFER = { amount: 250000, currency: 'EUR', iban: 'DE89370400440532013000' };

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A platform authenticator that verifies its user, as a phone or a laptop with a fingerprint reader. */
async function addAuthenticator(page: Page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
}

for (const backend of backends) {
  describe(
    `passkey-signed decisions on ${backend.name}`,
    { skip: backend.skip ?? browserSkip, timeout: 180_000 },
    () => {
      let t: TestService;
      let smtp: TestSmtp;
      let browser: Browser;
      let workspace: Workspace;
      let key: string;
      /** PUBLIC_URL: the browser's address of the service (its host is the relying party). */
      let publicUrl: string;
      const pages: TestPage[] = [];
      const app = appClient(() => t);

      const entries = async (): Promise<EvidenceEntry[]> =>
        (
          await t.service.ctx.db.all<{ seq: number; type: string; data: string }>(
            'SELECT seq, type, data FROM evidence WHERE workspace_id = $1 ORDER BY seq',
            [workspace.id],
          )
        ).map((row) => ({ ...row, data: JSON.parse(row.data) }) as unknown as EvidenceEntry);
      const entryOf = async (type: string, hold?: string) =>
        (await entries()).filter(
          (e) => e.type === type && (hold === undefined || (e.data as { hold?: string }).hold === hold),
        );
      const hold = async (args: Record<string, unknown> = TRANSFER) => {
        const made = await call(t.url, 'POST', '/api/v1/holds', {
          key,
          body: submission({ tool_name: 'transfer', arguments: args }),
        });
        assert.equal(made.status, 201);
        assert.equal(made.body.status, 'pending');
        return made.body.id as string;
      };

      /** A member in a browser of their own, with their own authenticator, signed in by a first invitation. */
      async function member(email: string) {
        const open = await openPage(browser, { baseURL: publicUrl });
        pages.push(open);
        await addAuthenticator(open.page);
        const { url } = await inviteLink(t.service.ctx, workspace, email);
        await open.page.goto(url);
        await open.page.getByRole('button', { name: 'Continue to approvals' }).click();
        await open.page.waitForURL(/\/app\/inbox/);
        return open;
      }

      /** The member's session as the app client holds it, from the browser's cookie and a page's token. */
      async function sessionOf(open: TestPage): Promise<Session> {
        const cookie = (await open.context.cookies()).find((c) => c.name === 'approvals_session')!.value;
        const inbox = await app.get({ cookie, csrf: '' }, '/app/inbox');
        return { cookie, csrf: inbox.text.match(/name="_csrf" value="([^"]+)"/)![1]! };
      }

      /** The next mail to `email` with this subject (holds' requests go to the same mailbox). */
      async function mailWith(email: string, subject: string) {
        for (;;) {
          const mail = await smtp.next(email);
          if (mail.subject === subject) return mail;
        }
      }

      /**
       * Adds a passkey as the member does: the first from the link sent to their own e-mail, a later one
       * confirmed by one they have (the page asks for it before making the new one).
       */
      async function enrol(open: TestPage, email: string, name: string) {
        await open.page.goto('/app/settings/passkeys');
        const first = (await open.page.getByRole('button', { name: 'Add a passkey' }).count()) === 0;
        if (first) {
          await open.page.getByRole('button', { name: 'Send me a link' }).click();
          await open.page.locator('.notice', { hasText: 'A link to add a passkey is on its way' }).waitFor();
          const mail = await mailWith(email, 'Add a passkey');
          const link = mail.links.find((url) => url.includes('/app/settings/passkeys/enrol/'));
          assert.ok(link, mail.body);
          await open.page.goto(link);
        }
        await open.page.getByLabel('Name (which device is it?)').fill(name);
        await open.page.getByRole('button', { name: 'Add a passkey' }).click();
        await open.page.locator('.notice', { hasText: 'Passkey added.' }).waitFor();
        const told = await mailWith(email, 'A passkey was added to your account');
        assert.match(told.body, new RegExp(name));
      }

      let ann: TestPage;
      let bob: TestPage;

      before(async () => {
        const port = await freePort();
        publicUrl = `http://localhost:${port}`;
        smtp = await startSmtp();
        t = await startTestService(backend, {
          env: { PORT: String(port), PUBLIC_URL: publicUrl, ...smtp.env },
        });
        ({ workspace, key } = await t.workspace({ config: WORKSPACE }));
        browser = await launchBrowser();
        ann = await member('ann@acme.test');
        bob = await member('bob@acme.test');
      });
      after(async () => {
        for (const open of pages) await open.close();
        await closeBrowser(browser);
        await t?.close();
        await smtp?.close();
      });

      test('a member enrols a passkey, its public key goes into the evidence, and it signs them in', async () => {
        await enrol(ann, 'ann@acme.test', 'Ann laptop');
        assert.match(await ann.page.locator('main').innerText(), /Ann laptop/);
        const [enrolled] = await entryOf('passkey.enrolled');
        const data = enrolled!.data as Record<string, unknown>;
        assert.equal((data.member as { email: string }).email, 'ann@acme.test');
        assert.equal(data.rp_id, 'localhost');
        assert.equal(data.algorithm, -7);
        assert.match(String(data.public_key), /^[A-Za-z0-9_-]{80,}$/);
        assert.equal(data.authorized_by, 'email_link');

        // Signed out, she signs in again with nothing but the passkey.
        await ann.context.clearCookies();
        const before = (await entryOf('member.signed_in')).length;
        await ann.page.goto('/app/login');
        await ann.page.getByRole('button', { name: 'Sign in with a passkey' }).click();
        await ann.page.waitForURL(/\/app\/inbox/);
        assert.equal((await entryOf('member.signed_in')).length, before + 1);
        assert.deepEqual(ann.errors, []);
      });

      test('an approval a signed rule covers needs the passkey; four-eyes signed by two members', async () => {
        await enrol(bob, 'bob@acme.test', 'Bob phone');
        const id = await hold();
        // Without a signature the approval is refused and nothing is recorded.
        const unsigned = await app.post(await sessionOf(ann), `/app/holds/${id}/decide`, {
          verdict: 'approve',
          back: '/app/inbox',
        });
        assert.equal(unsigned.status, 422);
        assert.match(unsigned.text, /must be signed with your passkey/);
        assert.equal((await findHold(t.service.ctx.db, workspace.id, id))!.approvalsReceived, 0);

        // Ann on the hold's page: Approve asks her authenticator to sign the action.
        await ann.page.goto(`/app/holds/${id}`);
        assert.match(await ann.page.locator('main').innerText(), /must be signed with your passkey/);
        await ann.page.getByRole('button', { name: 'Approve' }).click();
        await until(
          'Ann’s signed approval',
          async () => (await entryOf('hold.approval_recorded', id)).length === 1 || undefined,
        );

        // Bob from his decision link (e-mail), signed in or not.
        const bobId = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'bob@acme.test'))!.id;
        const link = await mintDecisionLink(t.service.ctx, {
          hold: (await findHold(t.service.ctx.db, workspace.id, id))!,
          memberId: bobId,
          channel: 'email',
        });
        await bob.page.goto(link);
        await bob.page.getByRole('button', { name: 'Approve' }).click();
        await until(
          'Bob’s signed approval',
          async () => (await entryOf('hold.approved', id)).length === 1 || undefined,
        );
        assert.equal((await findHold(t.service.ctx.db, workspace.id, id))!.status, 'approved');

        const decisions = [
          ...(await entryOf('hold.approval_recorded', id)),
          ...(await entryOf('hold.approved', id)),
        ];
        const credentials = decisions.map(
          (d) => (d.data as { passkey: { credential_id: string } }).passkey.credential_id,
        );
        assert.equal(new Set(credentials).size, 2, 'two members, two credentials');
        assert.deepEqual(ann.errors, []);
        assert.deepEqual(bob.errors, []);
      });

      test('an assertion replayed on another hold is refused: its challenge is another action', async () => {
        const [signed] = (await entries()).filter(
          (e) => e.type === 'hold.approval_recorded' && (e.data as { passkey?: unknown }).passkey,
        );
        const { passkey } = signed!.data as {
          passkey: {
            credential_id: string;
            authenticator_data: string;
            client_data_json: string;
            signature: string;
          };
        };
        const replayed = JSON.stringify({
          id: passkey.credential_id,
          rawId: passkey.credential_id,
          type: 'public-key',
          response: {
            authenticatorData: passkey.authenticator_data,
            clientDataJSON: passkey.client_data_json,
            signature: passkey.signature,
          },
          clientExtensionResults: {},
        });
        const other = await hold({ ...TRANSFER, iban: 'GB33BUKB20201555555555' });
        const before = (await entries()).length;
        const refused = await app.post(await sessionOf(ann), `/app/holds/${other}/decide`, {
          verdict: 'approve',
          back: '/app/inbox',
          passkey: replayed,
        });
        assert.equal(refused.status, 422);
        assert.match(refused.text, /challenge mismatch/);
        assert.ok(!refused.text.includes('GB33BUKB'), 'no payload value in the answer');
        assert.equal((await entries()).length, before, 'nothing recorded');
        assert.equal((await findHold(t.service.ctx.db, workspace.id, other))!.approvalsReceived, 0);
      });

      test('an argument changed after the passkey signed is refused (challenge mismatch)', async () => {
        const id = await hold();
        // Ann signs on the page; the form's post is held back to be sent after the change.
        let body = '';
        await ann.page.route('**/app/holds/*/decide', async (route) => {
          body = route.request().postData() ?? '';
          await route.abort();
        });
        await ann.page.goto(`/app/holds/${id}`);
        await ann.page.getByRole('button', { name: 'Approve' }).click();
        await until('the signed form', () => body.includes('passkey=') || undefined);
        await ann.page.unroute('**/app/holds/*/decide');
        const session = await sessionOf(ann);
        const send = () =>
          fetch(`${t.url}/app/holds/${id}/decide`, {
            method: 'POST',
            headers: {
              'content-type': 'application/x-www-form-urlencoded',
              cookie: `approvals_session=${session.cookie}`,
            },
            body,
            redirect: 'manual',
          });
        const tampered = JSON.stringify({ ...TRANSFER, iban: 'GB33BUKB20201555555555' });
        await t.service.ctx.db.run('UPDATE holds SET arguments = $2 WHERE workspace_id = $1 AND id = $3', [
          workspace.id,
          tampered,
          id,
        ]);
        // The form says what it showed: the call as it was, which is not the call now.
        const shownBefore = await send();
        assert.equal(shownBefore.status, 422);
        assert.match(await shownBefore.text(), /changed since it was shown/);
        // Without what the page showed, the passkey's own check refuses it.
        body = body.replace(/(^|&)shown=[^&]*/, '');
        const refused = await send();
        const text = await refused.text();
        assert.equal(
          refused.status,
          422,
          text
            .replace(/<[^>]+>/g, ' ')
            .replace(/\s+/g, ' ')
            .slice(-300),
        );
        assert.match(text, /challenge mismatch/);
        // The same signature over the arguments it was made for is good.
        await t.service.ctx.db.run('UPDATE holds SET arguments = $2 WHERE workspace_id = $1 AND id = $3', [
          workspace.id,
          JSON.stringify(TRANSFER),
          id,
        ]);
        assert.equal((await send()).status, 303);
        assert.equal((await entryOf('hold.approval_recorded', id)).length, 1);
      });

      test('a signed approval with changes signs the changed call; a later approval signs it as changed', async () => {
        const made = await call(t.url, 'POST', '/api/v1/holds', {
          key,
          body: submission({ tool_name: 'payout', arguments: { amount: 1200, to: 'ACME' } }),
        });
        assert.equal(made.body.status, 'pending', made.text);
        const id = made.body.id as string;

        await ann.page.goto(`/app/holds/${id}`);
        const form = ann.page.locator('form.decide');
        await form.getByText('Approve with changes', { exact: true }).first().click();
        // A change the rule refuses: said before any passkey is asked, nothing recorded.
        await form.getByLabel('amount').fill('9000');
        await form.getByRole('button', { name: 'Approve with changes' }).click();
        await form
          .getByText(/Not approved: changes: the changed call no longer matches the rule "Payouts"/)
          .waitFor();
        assert.equal((await findHold(t.service.ctx.db, workspace.id, id))!.approvalsReceived, 0);
        // The browser logs the refused request (422) itself: that entry, and only it, is expected.
        assert.deepEqual(ann.errors.splice(0), [
          'Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)',
        ]);

        await form.getByLabel('amount').fill('900');
        await form.getByRole('button', { name: 'Approve with changes' }).click();
        await until(
          'Ann’s signed approval with changes',
          async () => (await entryOf('hold.approval_recorded', id)).length === 1 || undefined,
        );
        const [annEntry] = await entryOf('hold.approval_recorded', id);
        const annData = annEntry!.data as { changed_arguments?: unknown; passkey?: unknown };
        assert.deepEqual(annData.changed_arguments, { amount: 900, to: 'ACME' });
        assert.ok(annData.passkey, 'signed');

        // Bob approves from his link, unchanged: his passkey signs the call as Ann changed it.
        const bobId = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'bob@acme.test'))!.id;
        const link = await mintDecisionLink(t.service.ctx, {
          hold: (await findHold(t.service.ctx.db, workspace.id, id))!,
          memberId: bobId,
          channel: 'email',
        });
        await bob.page.goto(link);
        assert.equal(await bob.page.getByLabel('amount').inputValue(), '900');
        await bob.page.getByRole('button', { name: 'Approve', exact: true }).click();
        await until(
          'Bob’s signed approval',
          async () => (await entryOf('hold.approved', id)).length === 1 || undefined,
        );
        const approved = (await call(t.url, 'GET', `/api/v1/holds/${id}`, { key })).body;
        assert.equal(approved.status, 'approved');
        assert.deepEqual(approved.decision.changed_arguments, { amount: 900, to: 'ACME' });

        // Offline, each signature verifies over the changed call, and not over the submitted one.
        const all = await entries();
        const submitted = all.find(
          (e) => e.type === 'hold.submitted' && (e.data as { hold: string }).hold === id,
        )!;
        const enrolmentOf = (entry: EvidenceEntry) =>
          all.find(
            (e) =>
              e.type === 'passkey.enrolled' &&
              (e.data as { credential_id: string }).credential_id ===
                (entry.data as { passkey: { credential_id: string } }).passkey.credential_id,
          )!;
        const [bobEntry] = await entryOf('hold.approved', id);
        assert.equal(
          (await verifySignedDecision({ decision: annEntry!, submitted, enrolment: enrolmentOf(annEntry!) }))
            .valid,
          true,
        );
        assert.equal(
          (
            await verifySignedDecision({
              decision: bobEntry!,
              submitted,
              enrolment: enrolmentOf(bobEntry!),
              changed: annEntry!,
            })
          ).valid,
          true,
        );
        assert.deepEqual(
          await verifySignedDecision({ decision: bobEntry!, submitted, enrolment: enrolmentOf(bobEntry!) }),
          {
            valid: false,
            reason: 'challenge_mismatch',
          },
        );
        // `changed` must be an earlier approval of the hold that changed the call.
        for (const wrong of [bobEntry!, submitted])
          assert.deepEqual(
            await verifySignedDecision({
              decision: bobEntry!,
              submitted,
              enrolment: enrolmentOf(bobEntry!),
              changed: wrong,
            }),
            { valid: false, reason: 'malformed' },
          );
        assert.deepEqual(ann.errors, []);
        assert.deepEqual(bob.errors, []);
      });

      test('the signed decisions verify offline: the SDK and approvals verify --export', async () => {
        const all = await entries();
        const report = await verifySignedDecisions(all);
        assert.equal(report.checked, 5);
        assert.deepEqual(report.invalid, []);

        const decision = all.find((e) => e.type === 'hold.approved')!;
        const holdId = (decision.data as { hold: string }).hold;
        const submitted = all.find(
          (e) => e.type === 'hold.submitted' && (e.data as { hold: string }).hold === holdId,
        )!;
        const credential = (decision.data as { passkey: { credential_id: string } }).passkey.credential_id;
        const enrolment = all.find(
          (e) =>
            e.type === 'passkey.enrolled' &&
            (e.data as { credential_id: string }).credential_id === credential,
        )!;
        const good = await verifySignedDecision({ decision, submitted, enrolment });
        assert.equal(good.valid, true);
        assert.equal(good.valid && good.member.email, 'bob@acme.test');
        // Another amount, another payee, another member's key: each is caught.
        const changed = structuredClone(submitted);
        (changed.data as { arguments: { amount: number } }).arguments.amount = 250001;
        assert.deepEqual(await verifySignedDecision({ decision, submitted: changed, enrolment }), {
          valid: false,
          reason: 'challenge_mismatch',
        });
        const annEnrolment = all.find((e) => e.type === 'passkey.enrolled' && e !== enrolment)!;
        assert.equal(
          (await verifySignedDecision({ decision, submitted, enrolment: annEnrolment })).valid,
          false,
        );

        const dir = mkdtempSync(join(tmpdir(), 'approvals-passkeys-'));
        try {
          let text = '';
          for await (const chunk of exportEvidence(t.service.ctx, workspace.id)) text += chunk;
          const exportFile = join(dir, 'evidence.jsonl');
          const keyFile = join(dir, 'key.json');
          writeFileSync(exportFile, text);
          writeFileSync(
            keyFile,
            JSON.stringify((await call(t.url, 'GET', '/.well-known/approvals-audit-key')).body),
          );
          const verified = await approvals(t.storage, ['verify', '--export', exportFile, '--key', keyFile]);
          assert.equal(verified.code, 0, verified.stderr);
          assert.match(verified.stdout, /5 passkey-signed decisions verified/);
          const stored = await approvals(t.storage, ['verify', '--workspace', workspace.slug]);
          assert.equal(stored.code, 0, stored.stderr);
          assert.match(stored.stdout, /5 passkey-signed decisions verified/);
          // The Python SDK reads the same export the same way (where python3 is there to run it).
          const python = spawnSync(
            'python3',
            [
              '-c',
              [
                'import json, sys',
                'from approvals import verify_signed_decisions',
                'lines = open(sys.argv[1]).read().splitlines()[1:]',
                'report = verify_signed_decisions(json.loads(line) for line in lines if line.strip())',
                'print(json.dumps({"checked": report.checked, "invalid": report.invalid}))',
              ].join('\n'),
              exportFile,
            ],
            { encoding: 'utf8', env: { ...process.env, PYTHONPATH: join(ROOT, 'packages/python/src') } },
          );
          if (!python.error) {
            assert.equal(python.status, 0, python.stderr);
            assert.deepEqual(JSON.parse(python.stdout), { checked: 5, invalid: [] });
          }
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      });

      test('a session alone adds no passkey: an admin signed in as a member cannot enrol one for them', async () => {
        // The admin passed on nothing: they used the first invitation of a member who never signed in.
        const admin = await member('admin@acme.test');
        const shown = await app.post(
          await sessionOf(admin),
          '/app/admin/members/carl%40acme.test/invite',
          {},
        );
        const url = shown.text.match(/<p class="secret" id="invite-link">([^<]+)<\/p>/)?.[1];
        assert.ok(url, 'a first invitation is shown');
        const attacker = await openPage(browser, { baseURL: publicUrl });
        pages.push(attacker);
        await addAuthenticator(attacker.page);
        await attacker.page.goto(url);
        await attacker.page.getByRole('button', { name: 'Continue to approvals' }).click();
        await attacker.page.waitForURL(/\/app\/inbox/);
        // The page offers only the link to Carl's own e-mail.
        await attacker.page.goto('/app/settings/passkeys');
        assert.equal(await attacker.page.getByRole('button', { name: 'Add a passkey' }).count(), 0);
        // A forged enrolment: a real authenticator response, without a passkey or the e-mailed link.
        const forged = async (link: string) =>
          attacker.page.evaluate(async (link) => {
            const b64 = (buffer: ArrayBuffer) =>
              btoa(String.fromCharCode(...new Uint8Array(buffer)))
                .replaceAll('+', '-')
                .replaceAll('/', '_')
                .replace(/=+$/, '');
            const bytes = (text: string) =>
              Uint8Array.from(atob(text.replaceAll('-', '+').replaceAll('_', '/')), (c) => c.charCodeAt(0));
            const csrf = (document.querySelector('input[name="_csrf"]') as HTMLInputElement).value;
            const { ceremony, options } = await (
              await fetch('/app/settings/passkeys/options', {
                method: 'POST',
                body: new URLSearchParams({ _csrf: csrf }),
              })
            ).json();
            const made = (await navigator.credentials.create({
              publicKey: {
                ...options,
                challenge: bytes(options.challenge),
                user: { ...options.user, id: bytes(options.user.id) },
              },
            })) as PublicKeyCredential;
            const response = made.response as AuthenticatorAttestationResponse;
            const body = new URLSearchParams({
              _csrf: csrf,
              ceremony,
              name: 'Not Carl',
              link,
              response: JSON.stringify({
                id: made.id,
                rawId: b64(made.rawId),
                type: 'public-key',
                response: {
                  clientDataJSON: b64(response.clientDataJSON),
                  attestationObject: b64(response.attestationObject),
                },
                clientExtensionResults: {},
              }),
            });
            const answer = await fetch('/app/settings/passkeys', {
              method: 'POST',
              body,
              redirect: 'manual',
            });
            return { status: answer.status, text: await answer.text() };
          }, link);
        for (const link of ['', 'made-up-link-token-of-forty-three-characters-xx']) {
          const refused = await forged(link);
          assert.equal(refused.status, 422);
          assert.match(
            refused.text,
            /needs one of your existing passkeys, or the link sent to your own e-mail/,
          );
        }
        const carl = (await entryOf('passkey.enrolled')).filter(
          (e) => (e.data as { member: { email: string } }).member.email === 'carl@acme.test',
        );
        assert.deepEqual(carl, []);
        assert.equal(smtp.messagesTo('admin@acme.test').length, 0);
      });

      test('a second passkey is confirmed with the first; removing one is evidenced; both are told by e-mail', async () => {
        await enrol(ann, 'ann@acme.test', 'Ann phone');
        const enrolled = await entryOf('passkey.enrolled');
        const [first, second] = enrolled.filter(
          (e) => (e.data as { member: { email: string } }).member.email === 'ann@acme.test',
        );
        assert.deepEqual((second!.data as { authorized_by: unknown }).authorized_by, {
          passkey: (first!.data as { credential_id: string }).credential_id,
        });
        await ann.page.goto('/app/settings/passkeys');
        await ann.page.getByRole('button', { name: 'Remove Ann laptop' }).click();
        await ann.page.locator('.notice', { hasText: 'Passkey removed.' }).waitFor();
        const [removed] = await entryOf('passkey.removed');
        assert.equal(
          (removed!.data as { credential_id: string }).credential_id,
          (first!.data as { credential_id: string }).credential_id,
        );
        const told = await mailWith('ann@acme.test', 'A passkey was removed from your account');
        assert.match(told.body, /Ann laptop/);
        assert.deepEqual(ann.errors, []);
      });
    },
  );
}
