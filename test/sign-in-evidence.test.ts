/**
 * Sign-ins are in the evidence (issue 37: docs/security.md said they were not). Each session a member
 * opens appends `member.signed_in` naming the member, and the chain still verifies.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { appClient, verifiedEvidence } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { startTestService, type TestService } from './support/service.ts';

const CONFIG = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: bob@acme.test, name: Bob, role: approver }
`;

for (const backend of backends) {
  describe(`sign-ins in the evidence on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    before(async () => {
      t = await startTestService(backend);
    });
    after(() => t?.close());

    test('every sign-in is recorded: member.signed_in names the member', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG });
      const signIns = async () =>
        (
          await t.service.ctx.db.all<{ data: string }>(
            "SELECT data FROM evidence WHERE workspace_id = $1 AND type = 'member.signed_in' ORDER BY seq",
            [workspace.id],
          )
        ).map((row) => (JSON.parse(row.data) as { member: { email: string } }).member.email);
      assert.deepEqual(await signIns(), []);
      const app = appClient(() => t);
      await app.signIn(workspace, 'bob@acme.test');
      await app.signIn(workspace, 'admin@acme.test');
      await app.signIn(workspace, 'bob@acme.test');
      assert.deepEqual(await signIns(), ['bob@acme.test', 'admin@acme.test', 'bob@acme.test']);
      assert.ok((await verifiedEvidence(t, key)) > 3);
    });
  });
}
