/**
 * Approve with changes may not move a call past a stricter rule (a review of issue 41, part 4): the
 * changed call is decided as a submission would be, and the change is refused unless what decides it
 * asks no more approvals and no other approvers than the hold has. On both backends.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decideHold } from '../src/services/decide-hold.ts';
import { ServiceError } from '../src/services/errors.ts';
import { findHold } from '../src/store/holds.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { startTestService, type TestService } from './support/service.ts';

const CONFIG = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: fin@acme.test, name: Fin, role: approver }
  - { email: cfo@acme.test, name: Cfo, role: approver }
tools:
  - { connection: SDK, tool: pay, classification: approval }
rules:
  - { name: Payments, tool: pay, when: [{ arg: amount, op: gt, value: 100 }], effect: approval, approvers: [fin@acme.test], editable: [amount] }
  - { name: Large payments, tool: pay, when: [{ arg: amount, op: gt, value: 10000 }], effect: approval, approvers: [cfo@acme.test, fin@acme.test], approvals_required: 2 }
`;

for (const backend of backends) {
  describe(`approve with changes and stricter rules on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let workspace: Workspace;
    let key: string;
    before(async () => {
      t = await startTestService(backend);
      ({ workspace, key } = await t.workspace({ config: CONFIG }));
    });
    after(() => t?.close());

    const submit = async (amount: number) => {
      const made = await call(t.url, 'POST', '/api/v1/holds', {
        key,
        body: submission({ tool_name: 'pay', arguments: { amount } }),
      });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      return made.body.id as string;
    };
    const approveAsFin = async (holdId: string, amount: number) =>
      decideHold(t.service.ctx, {
        workspaceId: workspace.id,
        holdId,
        memberId: (await findMemberByEmail(t.service.ctx.db, workspace.id, 'fin@acme.test'))!.id,
        verdict: 'approve',
        channel: 'inbox',
        changes: { amount },
      });

    test('a change into a stricter rule is refused and nothing is stored; within the rule it is made', async () => {
      const id = await submit(500);
      const refused = await approveAsFin(id, 50_000).catch((error: unknown) => error);
      assert.ok(refused instanceof ServiceError, String(refused));
      assert.equal(refused.code, 'validation_failed');
      assert.match(refused.message, /Large payments/);
      const hold = (await findHold(t.service.ctx.db, workspace.id, id))!;
      assert.deepEqual([hold.status, hold.approvalsReceived, hold.changedArguments], ['pending', 0, null]);

      const made = await approveAsFin(id, 900);
      assert.equal(made.outcome, 'recorded');
      const approved = (await findHold(t.service.ctx.db, workspace.id, id))!;
      assert.deepEqual([approved.status, approved.changedArguments], ['approved', { amount: 900 }]);
    });
  });
}
