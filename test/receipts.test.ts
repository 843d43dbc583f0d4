/**
 * Issue 41, part 5: an approved or allowed hold carries a signed receipt (services/receipts.ts) that
 * the system performing the action checks with the published keys, as a payment API would: with a
 * JOSE library (jose) and with the SDK's `verifyReceipt`. Tried as its attackers would: another
 * action, an expired receipt, another workspace's, a changed payload, a key of their own, and a
 * database writer who flips a hold's row. The MCP proxy sends the receipt upstream with the call.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, SignJWT } from 'jose';
import { type ReceiptKeys, receiptActionHash, verifyReceipt } from '../packages/sdk/src/receipt.ts';
import { freezeWorkspace, unfreezeWorkspace } from '../src/services/freeze.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { type RecordingUpstream, startRecordingUpstream } from './support/mcp-upstream.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';

const RECEIPT_META_KEY = 'io.approvals/receipt';
const BALANCE = { tool_name: 'read_balance', arguments: { account: 'A-1' } };
const INVOICE = { tool_name: 'send_invoice', arguments: { amount: 120, currency: 'EUR' } };

const policy = (upstreamUrl: string) => `members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: bea@acme.test, name: Bea, role: admin }
mcp_servers:
  - { slug: rec, name: Recorder, url: "${upstreamUrl}" }
tools:
  - { connection: SDK, tool: read_balance, classification: allow }
  - { connection: SDK, tool: send_invoice, classification: approval }
  - { connection: SDK, tool: delete_account, classification: deny }
  - { connection: Recorder, tool: record, classification: allow }
  - { connection: Recorder, tool: pay, classification: approval }
`;

/** The receipt with its payload changed and its header and signature kept. */
function withPayload(receipt: string, change: (claims: Record<string, unknown>) => void) {
  const [header, payload, signature] = receipt.split('.');
  const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8'));
  change(claims);
  return `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
}

for (const backend of backends) {
  describe(`hold receipts on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let upstream: RecordingUpstream;
    let workspace: Workspace;
    let key: string;
    let jwks: ReceiptKeys;
    const clients: Client[] = [];

    before(async () => {
      upstream = await startRecordingUpstream();
      upstream.offer('pay');
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
      ({ workspace, key } = await t.workspace({ config: policy(upstream.url) }));
      const published = await call(t.url, 'GET', '/.well-known/approvals-receipt-keys');
      assert.equal(published.status, 200);
      jwks = published.body;
    });
    after(async () => {
      try {
        await Promise.all(clients.map((client) => client.close().catch(() => {})));
        await t?.close();
      } finally {
        await upstream?.close();
      }
    });

    const submit = (overrides: Record<string, unknown>, apiKey = key) =>
      call(t.url, 'POST', '/api/v1/holds', { key: apiKey, body: submission(overrides) });
    const read = async (id: string) => (await call(t.url, 'GET', `/api/v1/holds/${id}`, { key })).body;
    const check = (
      receipt: string,
      action: object,
      options: Partial<Parameters<typeof verifyReceipt>[2]> = {},
    ) =>
      verifyReceipt(receipt, action as never, {
        jwks,
        workspace: workspace.slug,
        now: t.clock.now(),
        ...options,
      });
    /** As a payment API with a JOSE library checks it: signature, type, algorithm, expiry. */
    const joseCheck = (receipt: string, at = t.clock.now()) =>
      jwtVerify(receipt, createLocalJWKSet(jwks as never), {
        algorithms: ['EdDSA'],
        typ: 'approvals-receipt+jwt',
        currentDate: new Date(at),
      });

    test('an allowed hold carries a receipt that checks with the published keys', async () => {
      const body = submission(BALANCE);
      const created = await call(t.url, 'POST', '/api/v1/holds', { key, body });
      assert.equal(created.status, 201);
      assert.equal(created.body.status, 'allowed');
      const { receipt } = created.body;
      assert.equal(typeof receipt, 'string');
      assert.equal((await read(created.body.id)).receipt, receipt, 'read back, the same receipt');
      const replayed = await call(t.url, 'POST', '/api/v1/holds', { key, body });
      assert.equal(replayed.status, 200);
      assert.equal(replayed.body.receipt, receipt, 'a retry answers with the same receipt');

      const { payload, protectedHeader } = await joseCheck(receipt);
      assert.equal(protectedHeader.kid, jwks.keys.at(-1)!.kid);
      assert.equal(payload.sub, created.body.id);
      assert.equal(payload.workspace, workspace.slug);
      assert.equal(payload.action_sha256, await receiptActionHash(BALANCE));
      assert.equal(payload.exp! - payload.iat!, 15 * 60);

      const checked = await check(receipt, BALANCE);
      assert.ok(checked.valid, JSON.stringify(checked));
      assert.equal(checked.claims.decision, 'allowed');
      assert.deepEqual(checked.claims.approvers, []);
      assert.equal(checked.claims.environment, 'live');
    });

    test('a held hold has none until it is approved; then its approvers are named', async () => {
      const created = await submit(INVOICE);
      assert.equal(created.body.status, 'pending');
      assert.equal(created.body.receipt, undefined);
      assert.equal((await read(created.body.id)).receipt, undefined);

      await decideAs(t, workspace.id, created.body.id, 'approve');
      const record = await read(created.body.id);
      assert.equal(record.status, 'approved');
      const checked = await check(record.receipt, INVOICE);
      assert.ok(checked.valid, JSON.stringify(checked));
      assert.equal(checked.claims.decision, 'approved');
      assert.deepEqual(checked.claims.approvers, ['admin@acme.test']);
      assert.equal(checked.claims.iat, Math.floor(Date.parse(record.decision.decided_at) / 1000));
      await joseCheck(record.receipt);
      const waited = await call(t.url, 'POST', `/api/v1/holds/${created.body.id}/wait`, { key, body: {} });
      assert.equal(waited.body.receipt, record.receipt);
    });

    test('rejected, denied and expired holds have none', async () => {
      const rejected = await submit(INVOICE);
      await decideAs(t, workspace.id, rejected.body.id, 'reject');
      assert.equal((await read(rejected.body.id)).status, 'rejected');
      assert.equal((await read(rejected.body.id)).receipt, undefined);

      const denied = await submit({ tool_name: 'delete_account', arguments: { id: 7 } });
      assert.equal(denied.body.status, 'denied');
      assert.equal(denied.body.receipt, undefined);
      assert.equal((await read(denied.body.id)).receipt, undefined);
    });

    test('a receipt does not pass for another action, later, elsewhere, or forged', async () => {
      const { receipt } = (await submit(BALANCE)).body;
      const fails = async (reason: string, got: Promise<{ valid: boolean; reason?: string }>) =>
        assert.equal((await got).reason, reason);

      // Another amount, another tool, another connection: the action's hash differs.
      await fails('action_mismatch', check(receipt, { ...BALANCE, arguments: { account: 'A-2' } }));
      await fails('action_mismatch', check(receipt, { ...BALANCE, arguments: { account: 'A-1', extra: 1 } }));
      await fails('action_mismatch', check(receipt, { ...BALANCE, tool_name: 'send_invoice' }));
      await fails('action_mismatch', check(receipt, { ...BALANCE, connection: 'Recorder' }));
      // The same arguments in another key order are the same action (canonical JSON).
      assert.ok((await check(receipt, { arguments: { account: 'A-1' }, tool_name: 'read_balance' })).valid);

      // Fifteen minutes after the decision it is refused, by the SDK and by jose alike.
      const claims = JSON.parse(Buffer.from(receipt.split('.')[1]!, 'base64url').toString());
      const { exp } = claims;
      await fails('expired', check(receipt, BALANCE, { now: exp * 1000 }));
      await assert.rejects(joseCheck(receipt, exp * 1000 + 1000), { code: 'ERR_JWT_EXPIRED' });

      // Another workspace's receipt (same service, same keys), and a test key's for a live check.
      const other = await t.workspace({ config: policy(upstream.url) });
      const theirs = (await submit(BALANCE, other.key)).body.receipt;
      assert.ok((await check(theirs, BALANCE, { workspace: other.workspace.slug })).valid);
      await fails('wrong_workspace', check(theirs, BALANCE));
      await fails('wrong_environment', check(receipt, BALANCE, { environment: 'test' }));

      // A payload changed to name other arguments, or another workspace, keeps a signature that no longer fits.
      const changed = withPayload(receipt, (claims) => {
        claims.workspace = other.workspace.slug;
      });
      await fails('bad_signature', check(changed, BALANCE, { workspace: other.workspace.slug }));
      await assert.rejects(joseCheck(changed), { code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' });
      const otherHash = await receiptActionHash({ ...BALANCE, arguments: { account: 'A-9' } });
      const rehashed = withPayload(receipt, (claims) => {
        claims.action_sha256 = otherHash;
      });
      await fails('bad_signature', check(rehashed, { ...BALANCE, arguments: { account: 'A-9' } }));

      // Signed with a key of the attacker's own: under the service's kid, or under a kid of its own.
      const { privateKey } = generateKeyPairSync('ed25519');
      const header = decodeProtectedHeader(receipt);
      const forge = (kid: string) =>
        new SignJWT(claims).setProtectedHeader({ ...header, alg: 'EdDSA', kid }).sign(privateKey);
      await fails('bad_signature', check(await forge(String(header.kid)), BALANCE));
      await fails('unknown_key', check(await forge('attacker'), BALANCE));
      await assert.rejects(joseCheck(await forge('attacker')));
      // No signature at all.
      const none = `${Buffer.from(JSON.stringify({ ...header, alg: 'none' })).toString('base64url')}.${receipt.split('.')[1]}.`;
      await fails('unsupported_algorithm', check(none, BALANCE));
      await fails('malformed', check('not a receipt', BALANCE));
    });

    test('a database writer who flips a row gets no receipt signed', async () => {
      const { db } = t.service.ctx;
      const pending = (await submit(INVOICE)).body.id;
      await db.run(`UPDATE holds SET status = 'auto_allowed', submit_status = 'allowed' WHERE id = $1`, [
        pending,
      ]);
      assert.equal((await read(pending)).receipt, undefined);
      await db.run(
        `UPDATE holds SET status = 'approved', verdict = 'approve', channel = 'inbox', decided_at = $2 WHERE id = $1`,
        [pending, t.clock.now()],
      );
      const flipped = await read(pending);
      assert.equal(flipped.status, 'pending', 'answered as its evidence has it');
      assert.equal(flipped.receipt, undefined);

      // An allowed hold whose stored arguments were changed: read, or its submission retried.
      const body = submission(BALANCE);
      const allowed = (await call(t.url, 'POST', '/api/v1/holds', { key, body })).body.id;
      await db.run('UPDATE holds SET arguments = $2 WHERE id = $1', [
        allowed,
        JSON.stringify({ account: 'A-6' }),
      ]);
      assert.equal((await read(allowed)).receipt, undefined);
      const retried = await call(t.url, 'POST', '/api/v1/holds', { key, body });
      assert.equal(retried.status, 200);
      assert.equal(retried.body.receipt, undefined);
    });

    test('a frozen workspace has no receipts signed until it is unfrozen', async () => {
      const approved = (await submit(INVOICE)).body.id;
      await decideAs(t, workspace.id, approved, 'approve');
      const allowed = (await submit(BALANCE)).body.id;
      const receipt = (await read(approved)).receipt;
      assert.equal(typeof receipt, 'string');
      await freezeWorkspace(t.service.ctx, workspace, { reason: 'incident', by: 'test' });
      try {
        assert.equal((await read(approved)).receipt, undefined);
        assert.equal((await read(allowed)).receipt, undefined);
      } finally {
        await unfreezeWorkspace(t.service.ctx, workspace, { by: 'test' });
      }
      assert.equal((await read(approved)).receipt, receipt);
    });

    async function connect() {
      const client = new Client({ name: 'receipt-test', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${t.url}/mcp/rec`), {
          requestInit: { headers: { Authorization: `Bearer ${key}` } },
        }),
      );
      clients.push(client);
      return client;
    }
    /** The receipt the upstream got with the tools/call of `name` with these arguments. */
    const receiptSentFor = (name: string, args: Record<string, unknown>) =>
      until(`the upstream to get ${name}`, async () => {
        const sent = upstream.requests.find(
          (request) =>
            request.body?.method === 'tools/call' &&
            request.body.params?.name === name &&
            JSON.stringify(request.body.params?.arguments) === JSON.stringify(args),
        );
        return (sent?.body?.params?._meta as Record<string, string> | undefined)?.[RECEIPT_META_KEY];
      });

    test('the MCP proxy sends the receipt upstream with an allowed call, and the upstream can check it', async () => {
      const client = await connect();
      const args = { text: `hello ${backend.name}` };
      await client.callTool({ name: 'record', arguments: args });
      const receipt = await receiptSentFor('record', args);
      const checked = await check(receipt, { connection: 'Recorder', tool_name: 'record', arguments: args });
      assert.ok(checked.valid, JSON.stringify(checked));
      assert.equal(checked.claims.decision, 'allowed');
      const wrong = await check(receipt, {
        connection: 'Recorder',
        tool_name: 'record',
        arguments: { text: 'x' },
      });
      assert.equal(wrong.valid, false);
    });

    test('the MCP proxy sends the receipt upstream with an approved call, naming its approver', async () => {
      const client = await connect();
      const args = { amount: 5, to: `DE-${backend.name}` };
      const result = (await client.callTool({ name: 'pay', arguments: args })) as {
        content: { text?: string }[];
      };
      const reference = JSON.parse(result.content[1]!.text!).service.reference as string;
      await decideAs(t, workspace.id, reference, 'approve', 'bea@acme.test');
      await t.settled();
      const receipt = await receiptSentFor('pay', args);
      const checked = await check(receipt, { connection: 'Recorder', tool_name: 'pay', arguments: args });
      assert.ok(checked.valid, JSON.stringify(checked));
      assert.equal(checked.claims.decision, 'approved');
      assert.equal(checked.claims.sub, reference);
      assert.deepEqual(checked.claims.approvers, ['bea@acme.test']);
    });
  });
}
