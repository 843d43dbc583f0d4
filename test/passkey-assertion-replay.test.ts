/**
 * A passkey assertion decides once. Its challenge names the hold, the call and the verdict, and the
 * evidence keeps it for anyone to check: on a signed four-eyes rule with `editable`, after an approver's
 * change superseded Ada's signed approval, someone acting as Ada (her decision link) could change the
 * call back to what she signed and send her old assertion again, with an authenticator whose counter
 * stays 0 (synced passkeys). Refused now, and nothing is recorded; a fresh signature still works.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decideHold } from '../src/services/decide-hold.ts';
import { shownArgumentsHash } from '../src/services/decision-changes.ts';
import { decisionChallenge } from '../src/services/passkeys.ts';
import { findHold } from '../src/store/holds.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { freePort } from './support/mcp-upstream.ts';
import { startTestService, type TestService } from './support/service.ts';
import { enrolTestPasskey } from './support/test-passkey.ts';

const CONFIG = `members:
  - { email: ada@acme.test, name: Ada, role: admin }
  - { email: bea@acme.test, name: Bea, role: admin }
tools:
  - { connection: SDK, tool: pay, classification: approval }
rules:
  - { name: Two, tool: pay, effect: approval, approvals_required: 2, signed: true, editable: [amount] }
`;

for (const backend of backends) {
  describe(`a passkey assertion decides once, on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    before(async () => {
      const port = await freePort();
      t = await startTestService(backend, {
        env: { PORT: String(port), PUBLIC_URL: `http://localhost:${port}` },
      });
    });
    after(async () => t?.close());

    test('an approval superseded by a change is not accepted again once the call is changed back', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG });
      const { ctx } = t.service;
      const ada = (await findMemberByEmail(ctx.db, workspace.id, 'ada@acme.test'))!.id;
      const bea = (await findMemberByEmail(ctx.db, workspace.id, 'bea@acme.test'))!.id;
      const [signAda, signBea] = [
        await enrolTestPasskey(t, { id: 'cred-ada', workspaceId: workspace.id, memberId: ada }),
        await enrolTestPasskey(t, { id: 'cred-bea', workspaceId: workspace.id, memberId: bea }),
      ];
      const made = await call(t.url, 'POST', '/api/v1/holds', {
        key,
        body: submission({ tool_name: 'pay', arguments: { amount: 4000 } }),
      });
      const id = made.body.id as string;
      const hold = async () => (await findHold(ctx.db, workspace.id, id))!;
      const approve = async (memberId: string, extra: Record<string, unknown>) =>
        decideHold(ctx, {
          workspaceId: workspace.id,
          holdId: id,
          memberId,
          verdict: 'approve',
          channel: 'inbox',
          ...extra,
        });

      const adaSigned = signAda(decisionChallenge(await hold(), 'approve'));
      assert.equal((await approve(ada, { passkey: adaSigned })).outcome, 'recorded');
      // Bea changes the amount, signing the changed call: Ada's approval no longer counts.
      const changed = { ...(await hold()), changedArguments: { amount: 3000 } };
      const beaSigned = signBea(decisionChallenge(changed, 'approve'));
      assert.equal(
        (await approve(bea, { changes: { amount: 3000 }, passkey: beaSigned })).outcome,
        'recorded',
      );
      // As Ada, from a page showing the change: back to 4000, with her old assertion from the evidence.
      const shown = shownArgumentsHash(await hold());
      await assert.rejects(
        approve(ada, { changes: { amount: 4000 }, passkey: adaSigned, shown }),
        /passkey: was used for a decision before/,
      );
      const now = await hold();
      assert.deepEqual([now.approvalsReceived, now.changedArguments], [1, { amount: 3000 }]);
      // Ada herself signs the change back anew: recorded (and it restarts four eyes).
      const fresh = signAda(decisionChallenge({ ...now, changedArguments: null }, 'approve'));
      assert.equal(
        (await approve(ada, { changes: { amount: 4000 }, passkey: fresh, shown })).outcome,
        'recorded',
      );
    });
  });
}
