/**
 * Evidence against someone who can write to the database: each attack below rewrites what is stored
 * the way such a person would, and verification (API, CLI, the SDK's offline check) must end
 * `valid: false` with a named reason. Also: published checkpoints, their webhook event, key rotation.
 */
import assert from 'node:assert/strict';
import { createHash, createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Checkpoint, checkpointInput, entryHashInputWithData } from '../packages/sdk/src/chain.ts';
import { verifyEvidenceExport } from '../packages/sdk/src/evidence.ts';
import { loadConfig } from '../src/config.ts';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import { exportEvidence } from '../src/services/export-evidence.ts';
import { listCheckpoints, publishCheckpoints } from '../src/services/publish-checkpoints.ts';
import { FULL_CHECK_EVERY_MS } from '../src/services/chain-guard.ts';
import { verifyChain } from '../src/services/verify-chain.ts';
import { serviceSignature } from '../src/services/webhooks.ts';
import { startService } from '../src/runtime.ts';
import type { Sql } from '../src/store/db.ts';
import { lockChainHead } from '../src/store/evidence.ts';
import { ChainFrozenError } from '../src/services/errors.ts';
import { backends, sqlite } from './support/backends.ts';
import { appClient } from './support/app-client.ts';
import { approvals } from './support/cli.ts';
import { call, submission } from './support/http.ts';
import { startReceiver } from './support/receiver.ts';
import { startServerProcess } from './support/server-process.ts';
import { decideAs, startTestService, TestClock, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';

function ed25519() {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    pem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    publicPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    keyId: createHash('sha256')
      .update(String(publicKey.export({ format: 'jwk' }).x))
      .digest('hex')
      .slice(0, 16),
  };
}

interface Row {
  seq: number;
  prev_hash: string;
  type: string;
  occurred_at: string;
  data: string;
  hash: string;
}

const entriesOf = (sql: Sql, workspaceId: string) =>
  sql.all<Row>(
    'SELECT seq, prev_hash, type, occurred_at, data, hash FROM evidence WHERE workspace_id = $1 ORDER BY seq',
    [workspaceId],
  );

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** What a database writer appends past the head without moving it: an entry linked to `last`, hashed right. */
async function storePastHead(sql: Sql, workspaceId: string, last: { seq: number; hash: string }) {
  const entry = {
    seq: last.seq + 1,
    prev_hash: last.hash,
    orgId: workspaceId,
    type: 'key.revoked',
    occurred_at: new Date().toISOString(),
  };
  const data = '{"key_id":"key_x"}';
  const hash = sha256(entryHashInputWithData(entry, data));
  await sql.run(
    'INSERT INTO evidence (workspace_id, seq, prev_hash, type, occurred_at, data, hash) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    [workspaceId, entry.seq, entry.prev_hash, entry.type, entry.occurred_at, data, hash],
  );
  return { seq: entry.seq, hash };
}

/**
 * A check that finds the chain broken, with the transaction that records its freeze held back until
 * `record()`: as a busy database or a slow instance would hold it.
 */
async function checkWithFreezeHeldBack(ctx: TestService['service']['ctx'], workspaceId: string) {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let recorded: Promise<unknown> | undefined;
  const slow: typeof ctx.db = Object.create(ctx.db);
  slow.transaction = (work) => (recorded = held.then(() => ctx.db.transaction(work))) as never;
  await ctx.db.transaction(async (tx) => {
    const head = (await lockChainHead(tx, workspaceId))!;
    await assert.rejects(
      ctx.chainGuard.check(tx, { ...ctx, db: slow }, workspaceId, head, true),
      ChainFrozenError,
    );
  });
  return {
    async record() {
      await until('the freeze to be recorded', () => recorded !== undefined);
      release();
      await recorded;
    },
  };
}

/**
 * What a database writer does to rewrite history: changes entry `seq`, recomputes every later hash
 * and link so the chain is whole again, and moves the head, signed with `privateKeyPem` as `keyId`.
 */
async function rewrite(
  sql: Sql,
  workspaceId: string,
  seq: number,
  change: (data: string) => string,
  /** Null: the head's old signature is left as it was (the attacker has no key). */
  signer: { pem: string; keyId: string } | null,
) {
  const rows = await entriesOf(sql, workspaceId);
  let prev = rows[seq - 2]?.hash ?? '0'.repeat(64);
  for (const row of rows.slice(seq - 1)) {
    const data = row.seq === seq ? change(row.data) : row.data;
    const hash = sha256(entryHashInputWithData({ ...row, prev_hash: prev, orgId: workspaceId }, data));
    await sql.run(
      'UPDATE evidence SET data = $3, prev_hash = $4, hash = $5 WHERE workspace_id = $1 AND seq = $2',
      [workspaceId, row.seq, data, prev, hash],
    );
    prev = hash;
  }
  if (!signer) {
    await sql.run('UPDATE evidence_heads SET hash = $2 WHERE workspace_id = $1', [workspaceId, prev]);
    return;
  }
  const head = {
    seq: rows.at(-1)!.seq,
    hash: prev,
    signed_at: rows.at(-1)!.occurred_at,
    key_id: signer.keyId,
  };
  const signature = sign(
    null,
    Buffer.from(checkpointInput({ orgId: workspaceId, ...head })),
    createPrivateKey(signer.pem),
  ).toString('base64');
  await sql.run(
    'UPDATE evidence_heads SET seq = $2, hash = $3, signed_at = $4, key_id = $5, signature = $6 WHERE workspace_id = $1',
    [workspaceId, head.seq, head.hash, head.signed_at, head.key_id, signature],
  );
}

async function exportText(t: TestService, workspaceId: string): Promise<string> {
  let text = '';
  for await (const chunk of exportEvidence(t.service.ctx, workspaceId)) text += chunk;
  return text;
}

const wellKnown = async (t: TestService) =>
  (await call(t.url, 'GET', '/.well-known/approvals-audit-key')).body;

const verify = async (t: TestService, apiKey: string) =>
  (await call(t.url, 'GET', '/api/v1/audit/verify', { key: apiKey })).body;

const checkpoints = async (t: TestService, key: string, query = '') =>
  call(t.url, 'GET', `/api/v1/audit/checkpoints${query}`, { key });

/** Moves past the minute since the last checkpoint, and waits for the worker to publish the head as it is now. */
async function published(t: TestService, workspaceId: string): Promise<Checkpoint> {
  t.clock.advance(61_000);
  const head = (await entriesOf(t.service.ctx.db, workspaceId)).at(-1)!;
  // Asked of the service, not the API: polling the API would spend the workspace's verify quota
  // (120 a minute) on a busy machine and end in 429s.
  return until(`checkpoint ${head.seq} published`, async () => {
    const { checkpoints: list } = await listCheckpoints(t.service.ctx, workspaceId, { limit: 1000 });
    const found = list.find((cp) => cp.seq === head.seq);
    // The worker may have read an older head just before the clock moved, and published it as new:
    // then the head waits for the next minute.
    const newest = list.at(-1);
    if (!found && newest && newest.seq < head.seq && Date.parse(newest.published_at) > t.clock.now() - 60_000)
      t.clock.advance(61_000);
    if (!found) return undefined;
    const { seq, hash, signed_at, key_id, signature } = found;
    return { seq, hash, signed_at, key_id, signature };
  });
}

for (const backend of backends) {
  describe(
    `evidence against a database writer on ${backend.name}`,
    { skip: backend.skip, timeout: 120_000 },
    () => {
      const key = ed25519();
      let t: TestService;
      let dir: string;
      before(async () => {
        t = await startTestService(backend, {
          env: { AUDIT_SIGNING_KEY: key.pem, ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_SCALE: '0.001' },
        });
        dir = mkdtempSync(join(tmpdir(), 'approvals-trust-'));
      });
      after(async () => {
        await t?.close();
        rmSync(dir, { recursive: true, force: true });
      });

      const verify = async (apiKey: string) =>
        (await call(t.url, 'GET', '/api/v1/audit/verify', { key: apiKey })).body;

      test('cutting off the newest entry and unsigning the head is caught (checkpoint_missing)', async () => {
        const { workspace, key: apiKey } = await t.workspace();
        const before = await published(t, workspace.id);
        // Within the minute after a publication: the hold's entries are covered by the head alone.
        await call(t.url, 'POST', '/api/v1/holds', { key: apiKey, body: submission() });
        const rows = await entriesOf(t.service.ctx.db, workspace.id);
        const kept = rows.at(-2)!;
        await t.service.ctx.db.run('DELETE FROM evidence WHERE workspace_id = $1 AND seq = $2', [
          workspace.id,
          rows.at(-1)!.seq,
        ]);
        await t.service.ctx.db.run(
          'UPDATE evidence_heads SET seq = $2, hash = $3, signature = NULL, signed_at = NULL, key_id = NULL WHERE workspace_id = $1',
          [workspace.id, kept.seq, kept.hash],
        );
        const result = await verify(apiKey);
        assert.equal(result.valid, false);
        assert.equal(result.checkpoint, null);
        assert.deepEqual(result.first_invalid, { seq: before.seq + 1, reason: 'checkpoint_missing' });

        const offline = await verifyEvidenceExport(await exportText(t, workspace.id), {
          keys: await wellKnown(t),
        });
        assert.equal(offline.valid, false);
        assert.deepEqual(offline.first_invalid, { seq: 1, reason: 'checkpoint_missing' });
        assert.equal(offline.checked, kept.seq, 'every entry exported, none vouched for');
      });

      test('entries appended past the head by someone else are caught (checkpoint_missing)', async () => {
        const { workspace, key: apiKey } = await t.workspace();
        const rows = await entriesOf(t.service.ctx.db, workspace.id);
        const last = rows.at(-1)!;
        const forged = await storePastHead(t.service.ctx.db, workspace.id, last);
        assert.deepEqual((await verify(apiKey)).first_invalid, {
          seq: forged.seq,
          reason: 'checkpoint_missing',
        });
        const offline = await verifyEvidenceExport(await exportText(t, workspace.id), {
          keys: await wellKnown(t),
        });
        assert.deepEqual(offline.first_invalid, { seq: forged.seq, reason: 'checkpoint_missing' });
      });

      test('a key added to the database is neither trusted nor published (checkpoint_invalid)', async () => {
        const { workspace, key: apiKey } = await t.workspace();
        await call(t.url, 'POST', '/api/v1/holds', { key: apiKey, body: submission() });
        const attacker = ed25519();
        await t.service.ctx.db.run(
          'INSERT INTO signing_keys (id, private_key, public_key, created_at) VALUES ($1, $2, $3, $4)',
          [attacker.keyId, attacker.pem, attacker.publicPem, Date.now()],
        );
        await rewrite(
          t.service.ctx.db,
          workspace.id,
          5,
          (data) => data.replace('"amount":120', '"amount":12'),
          attacker,
        );

        const result = await verify(apiKey);
        assert.equal(result.valid, false);
        assert.equal(result.first_invalid.reason, 'checkpoint_invalid');
        assert.equal(result.checkpoint.key_id, attacker.keyId);

        const keys = await wellKnown(t);
        assert.deepEqual(
          keys.keys.map((k: { key_id: string }) => k.key_id),
          [key.keyId],
        );
        assert.equal(keys.key_id, key.keyId);
        const offline = await verifyEvidenceExport(await exportText(t, workspace.id), { keys });
        assert.equal(offline.valid, false);
        assert.equal(offline.signature, 'invalid');
        assert.equal(offline.first_invalid?.reason, 'checkpoint_invalid');
        const pinned = await verifyEvidenceExport(await exportText(t, workspace.id), { keys: key.publicPem });
        assert.equal(pinned.first_invalid?.reason, 'checkpoint_invalid');
      });

      test('a head moved back to an older signed head is caught by the published checkpoint (truncated)', async () => {
        const { workspace, key: apiKey } = await t.workspace();
        const db = t.service.ctx.db;
        const first = await published(t, workspace.id);
        const savedHead = await db.one<Record<string, unknown>>(
          'SELECT seq, hash, signed_at, key_id, signature FROM evidence_heads WHERE workspace_id = $1',
          [workspace.id],
        );
        await call(t.url, 'POST', '/api/v1/holds', { key: apiKey, body: submission() });
        const second = await published(t, workspace.id);
        assert.ok(second.seq > first.seq);

        await db.run('DELETE FROM evidence WHERE workspace_id = $1 AND seq > $2', [workspace.id, first.seq]);
        await db.run(
          'UPDATE evidence_heads SET seq = $2, hash = $3, signed_at = $4, key_id = $5, signature = $6 WHERE workspace_id = $1',
          [
            workspace.id,
            savedHead!.seq,
            savedHead!.hash,
            savedHead!.signed_at,
            savedHead!.key_id,
            savedHead!.signature,
          ],
        );
        assert.deepEqual((await verify(apiKey)).first_invalid, { seq: first.seq + 1, reason: 'truncated' });

        // Deleting the published checkpoints too fools the service, but not whoever kept one.
        await db.run('DELETE FROM evidence_checkpoints WHERE workspace_id = $1 AND seq > $2', [
          workspace.id,
          first.seq,
        ]);
        assert.equal((await verify(apiKey)).valid, true);
        const offline = await verifyEvidenceExport(await exportText(t, workspace.id), {
          keys: key.publicPem,
          checkpoint: first,
        });
        assert.equal(offline.valid, true, 'the older checkpoint is still in the chain');
        // A checkpoint kept from past the export's end: the export was cut off (exit 3, not a usage error).
        const cut = await verifyEvidenceExport(await exportText(t, workspace.id), {
          keys: key.publicPem,
          checkpoint: second,
        });
        assert.equal(cut.valid, false);
        assert.deepEqual(cut.first_invalid, { seq: first.seq + 1, reason: 'truncated' });
        const file = join(dir, `second-${backend.name}.json`);
        writeFileSync(file, JSON.stringify(second));
        const exportFile = join(dir, `cut-${backend.name}.jsonl`);
        writeFileSync(exportFile, await exportText(t, workspace.id));
        const keyFile = join(dir, `key-${backend.name}.pem`);
        writeFileSync(keyFile, key.publicPem);
        const offlineCli = await approvals(t.storage, [
          'verify',
          '--export',
          exportFile,
          '--key',
          keyFile,
          '--against',
          file,
        ]);
        assert.equal(offlineCli.code, 3, offlineCli.stderr);
        assert.match(offlineCli.stderr, new RegExp(`not intact: truncated at seq ${first.seq + 1}`));
        const cli = await approvals(
          t.storage,
          ['verify', '--workspace', workspace.slug, '--against', file, '--json'],
          {
            AUDIT_SIGNING_KEY: key.pem,
          },
        );
        assert.equal(cli.code, 3, cli.stderr);
        assert.match(cli.stderr, /not intact: rewritten at seq \d+/);
        assert.equal(JSON.parse(cli.stdout).first_invalid.reason, 'rewritten');
      });

      test('checkpoints are published at most once a minute, listed, and sent as signed webhook events', async () => {
        const receiver = await startReceiver();
        try {
          const { workspace, key: apiKey } = await t.workspace();
          const applied = await applyConfig(
            t.service.ctx,
            workspace,
            parseConfig(`webhook: { url: "${receiver.url}" }\n`),
          );
          const first = await published(t, workspace.id);
          const count = (await checkpoints(t, apiKey)).body.checkpoints.length;
          for (let i = 0; i < 3; i++)
            await call(t.url, 'POST', '/api/v1/holds', { key: apiKey, body: submission() });
          // Within the minute nothing more is published: a round run here, after the worker's, finds nothing due.
          assert.equal((await publishCheckpoints(t.service.ctx)).published, 0);
          assert.equal(
            (await checkpoints(t, apiKey)).body.checkpoints.length,
            count,
            'none within the minute',
          );
          const second = await published(t, workspace.id);
          assert.equal(second.seq, first.seq + 4, 'the tool registered, then three holds submitted');

          const listed = (await checkpoints(t, apiKey)).body;
          assert.equal(listed.orgId, workspace.id);
          // The workspace's first checkpoint may have come before the webhook was declared.
          assert.deepEqual(listed.checkpoints.map((cp: Checkpoint) => cp.seq).slice(-2), [
            first.seq,
            second.seq,
          ]);
          assert.equal(listed.has_more, false);
          assert.deepEqual(
            (await checkpoints(t, apiKey, `?since=${first.seq}`)).body.checkpoints.map(
              (cp: Checkpoint) => cp.seq,
            ),
            [second.seq],
          );
          const paged = (await checkpoints(t, apiKey, `?limit=${count}`)).body;
          assert.equal(paged.checkpoints.length, count);
          assert.equal(paged.has_more, true);
          const byTime = (
            await checkpoints(
              t,
              apiKey,
              `?since=${encodeURIComponent(listed.checkpoints.at(-1).published_at)}`,
            )
          ).body;
          assert.deepEqual(
            byTime.checkpoints.map((cp: Checkpoint) => cp.seq),
            [second.seq],
          );
          for (const query of ['?since=yesterday', '?limit=0', '?limit=1001', '?since=-1']) {
            const answer = await checkpoints(t, apiKey, query);
            assert.equal(answer.status, 422, query);
            assert.equal(answer.body.error, 'validation_failed');
            assert.doesNotMatch(JSON.stringify(answer.body), /yesterday/);
          }

          // An earlier checkpoint may have been sent too, once the webhook was declared: these two are checked.
          const wanted = [first, second].map((cp) => `checkpoint:${cp.seq}`);
          const events = await receiver.waitFor(2, {
            filter: (r) =>
              r.headers['x-service-event'] === 'evidence.checkpoint' &&
              wanted.includes(JSON.parse(r.body).id as string),
          });
          for (const [i, event] of events.entries()) {
            assert.equal(
              event.headers['x-service-signature'],
              serviceSignature(applied.webhook_secret!, event.body),
            );
            const body = JSON.parse(event.body);
            assert.equal(body.event, 'evidence.checkpoint');
            assert.equal(body.id, `checkpoint:${[first, second][i]!.seq}`);
            assert.deepEqual(body.data, { orgId: workspace.id, ...[first, second][i] });
          }
          // What the receiver kept proves the export: it holds that seq with that hash.
          const offline = await verifyEvidenceExport(await exportText(t, workspace.id), {
            keys: key.publicPem,
            checkpoint: JSON.parse(events[0]!.body).data,
          });
          assert.equal(offline.valid, true);
        } finally {
          await receiver.close();
        }
      });
    },
  );

  describe(
    `the signer extends only what it verified, on ${backend.name}`,
    { skip: backend.skip, timeout: 120_000 },
    () => {
      const key = ed25519();
      const iban = 'DE02120300000000202051';
      const forgedIban = 'GB33BUKB20201555555555';

      test('a rewritten history is never signed on: the write is refused, the chain frozen, until an evidenced re-anchor', async () => {
        const receiver = await startReceiver();
        const t = await startTestService(backend, {
          env: { AUDIT_SIGNING_KEY: key.pem, ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_SCALE: '0.001' },
        });
        try {
          const { workspace, key: apiKey } = await t.workspace({
            config: `members:\n  - { email: admin@acme.test, name: Admin, role: admin }\nwebhook: { url: "${receiver.url}" }\n`,
          });
          const other = await t.workspace();
          const db = t.service.ctx.db;
          const app = appClient(t);
          const admin = await app.signIn(workspace, 'admin@acme.test');
          const first = await call(t.url, 'POST', '/api/v1/holds', {
            key: apiKey,
            body: submission({ arguments: { amount: 250000, iban } }),
          });
          assert.equal(first.status, 201);
          // A checkpoint published over the genuine entry, as the worker does (it runs every 50 ms):
          // taken here, so that the test does not depend on whether it came before the rewrite.
          const kept = await published(t, workspace.id);
          const submitted = (await entriesOf(db, workspace.id)).find((row) => row.data.includes(iban))!;
          // The database writer's rewrite: every later hash and the head's hash recomputed, the head's
          // signature left as it was (the key is outside the database).
          await rewrite(db, workspace.id, submitted.seq, (data) => data.replace(iban, forgedIban), null);
          const stored = await entriesOf(db, workspace.id);
          const head = stored.at(-1)!;

          const refused = await call(t.url, 'POST', '/api/v1/holds', { key: apiKey, body: submission() });
          assert.equal(refused.status, 503);
          assert.equal(refused.body.error, 'evidence_frozen');
          assert.doesNotMatch(refused.text, new RegExp(forgedIban));
          await assert.rejects(decideAs(t, workspace.id, first.body.id, 'approve'), /frozen/);
          const fromApp = await app.post(admin, `/app/holds/${first.body.id}/decide`, {
            verdict: 'approve',
            comment: '',
            back: `/app/holds/${first.body.id}`,
            next: '',
          });
          assert.equal(fromApp.status, 503);
          assert.match(fromApp.text, /Nothing was changed/);
          assert.deepEqual(await entriesOf(db, workspace.id), stored, 'nothing stored');
          assert.equal(
            (await call(t.url, 'POST', '/api/v1/holds', { key: other.key, body: submission() })).status,
            201,
            'other workspaces go on',
          );

          // Every check still says the history was rewritten; nothing vouches for it.
          const verified = await verify(t, apiKey);
          assert.equal(verified.valid, false);
          assert.deepEqual(verified.first_invalid, { seq: head.seq, reason: 'checkpoint_invalid' });
          const offline = await verifyEvidenceExport(await exportText(t, workspace.id), {
            keys: key.publicPem,
          });
          assert.equal(offline.valid, false);
          t.clock.advance(61_000);
          await t.settled();
          // One may have been published before the rewrite (the worker runs every 50 ms): none vouches
          // for the rewritten history, whose hashes are the stored ones from the rewritten entry on.
          const listed = await listCheckpoints(t.service.ctx, workspace.id, { limit: 1000 });
          const rewritten = new Map(stored.map((row) => [row.seq, row.hash]));
          assert.ok(
            listed.checkpoints.every((cp) => cp.seq < submitted.seq || rewritten.get(cp.seq) !== cp.hash),
            'no checkpoint covers the rewrite',
          );

          // Said where operators look: /readyz, the metric, the evidence.alert event.
          const ready = await call(t.url, 'GET', '/readyz');
          assert.equal(
            ready.status,
            200,
            'storage answers: the instance stays ready for the other workspaces',
          );
          assert.deepEqual(ready.body.evidence_frozen, [workspace.slug]);
          const metrics = (await call(t.url, 'GET', '/metrics')).text;
          assert.match(metrics, /^approvals_evidence_chains_frozen 1$/m);
          const [alert] = await receiver.waitFor(1, {
            filter: (r) => r.headers['x-service-event'] === 'evidence.alert',
          });
          const body = JSON.parse(alert!.body);
          assert.equal(body.event, 'evidence.alert');
          assert.deepEqual(body.data, {
            orgId: workspace.id,
            state: 'frozen',
            seq: head.seq,
            reason: 'checkpoint_invalid',
          });

          // The operator's re-anchor is an entry that names the break, signed; writes go on after it.
          const reason = 'IBAN rewritten in the database; incident 7';
          const noReason = await approvals(
            t.storage,
            ['evidence', 'reanchor', '--workspace', workspace.slug],
            {
              AUDIT_SIGNING_KEY: key.pem,
            },
          );
          assert.equal(noReason.code, 2, noReason.stderr);
          const reanchored = await approvals(
            t.storage,
            ['evidence', 'reanchor', '--workspace', workspace.slug, '--reason', reason],
            { AUDIT_SIGNING_KEY: key.pem },
          );
          assert.equal(reanchored.code, 0, reanchored.stderr);
          const entry = (await entriesOf(db, workspace.id)).at(-1)!;
          assert.equal(entry.type, 'evidence.reanchored');
          assert.deepEqual(JSON.parse(entry.data), {
            reason,
            break: { seq: head.seq, reason: 'checkpoint_invalid' },
            recorded_break: { seq: head.seq, reason: 'checkpoint_invalid' },
            stored_head: { seq: head.seq, hash: head.hash },
            appended_after: { seq: head.seq, hash: head.hash },
          });
          const again = await call(t.url, 'POST', '/api/v1/holds', { key: apiKey, body: submission() });
          assert.equal(again.status, 201);
          assert.deepEqual((await call(t.url, 'GET', '/readyz')).body, { status: 'ok' });
          assert.match((await call(t.url, 'GET', '/metrics')).text, /^approvals_evidence_chains_frozen 0$/m);
          const resumed = await receiver.waitFor(2, {
            filter: (r) => r.headers['x-service-event'] === 'evidence.alert',
          });
          assert.equal(JSON.parse(resumed[1]!.body).data.state, 'reanchored');
          // The re-anchor names the break, it does not hide it: the checkpoint published before the
          // rewrite still shows it.
          const reanchoredVerify = await verify(t, apiKey);
          assert.equal(reanchoredVerify.valid, false);
          assert.deepEqual(reanchoredVerify.first_invalid, { seq: kept.seq, reason: 'checkpoint_invalid' });
        } finally {
          await t.close();
          await receiver.close();
        }
      });

      test('a head moved back to an older signed head is never extended, also after a restart (AUDIT_STATE_DIR)', async () => {
        const state = mkdtempSync(join(tmpdir(), 'approvals-state-'));
        const storage = await backend.create();
        const env = { AUDIT_SIGNING_KEY: key.pem, AUDIT_STATE_DIR: state };
        let t = await startTestService(backend, { storage, env });
        try {
          const { workspace, key: apiKey } = await t.workspace();
          const db = () => t.service.ctx.db;
          const saveHead = () =>
            db().one<Record<string, unknown>>(
              'SELECT seq, hash, signed_at, key_id, signature FROM evidence_heads WHERE workspace_id = $1',
              [workspace.id],
            );
          const rollBack = async (saved: Record<string, unknown>) => {
            await db().run('DELETE FROM evidence WHERE workspace_id = $1 AND seq > $2', [
              workspace.id,
              saved.seq,
            ]);
            await db().run('DELETE FROM evidence_checkpoints WHERE workspace_id = $1', [workspace.id]);
            await db().run(
              'UPDATE evidence_heads SET seq = $2, hash = $3, signed_at = $4, key_id = $5, signature = $6 WHERE workspace_id = $1',
              [workspace.id, saved.seq, saved.hash, saved.signed_at, saved.key_id, saved.signature],
            );
          };
          const submit = () => call(t.url, 'POST', '/api/v1/holds', { key: apiKey, body: submission() });

          assert.equal((await submit()).status, 201);
          const older = (await saveHead())!;
          assert.equal((await submit()).status, 201);
          await rollBack(older);
          const rolledBackAt = t.clock.now();
          const refused = await submit();
          assert.equal(refused.status, 503);
          assert.equal(refused.body.error, 'evidence_frozen');
          const cut = { seq: Number(older.seq) + 1, reason: 'truncated' };
          await until('the freeze to be recorded', async () =>
            (await call(t.url, 'GET', '/readyz')).body.evidence_frozen?.includes(workspace.slug),
          );
          // What no walk of the stored chain can see is said all the same: by verify, and by the
          // publisher, which publishes nothing over it.
          assert.deepEqual((await verify(t, apiKey)).first_invalid, cut);
          await t.clock.advance(61_000);
          await t.settled();
          // The worker may have published a head from before the cut (its transaction committing after
          // the cut's DELETE): that one is true. Nothing is published after it.
          const { checkpoints: after } = await listCheckpoints(t.service.ctx, workspace.id, { limit: 10 });
          assert.ok(
            after.every((cp) => Date.parse(cp.published_at) < rolledBackAt),
            JSON.stringify(after),
          );
          assert.equal(
            (await db().one<{ seq: number }>('SELECT max(seq) AS seq FROM evidence WHERE workspace_id = $1', [
              workspace.id,
            ]))!.seq,
            older.seq,
          );

          const reanchored = await approvals(
            t.storage,
            ['evidence', 'reanchor', '--workspace', workspace.slug, '--reason', 'restored from backup'],
            env,
          );
          assert.equal(reanchored.code, 0, reanchored.stderr);
          const entry = (await entriesOf(db(), workspace.id)).at(-1)!;
          assert.deepEqual(JSON.parse(entry.data).recorded_break, cut);
          assert.equal((await submit()).status, 201, 'after the re-anchor');

          // Across a restart: the newest head signed is kept in AUDIT_STATE_DIR.
          const beforeRestart = (await saveHead())!;
          assert.equal((await submit()).status, 201);
          await t.stop();
          t = await startTestService(backend, { storage, env });
          await rollBack(beforeRestart);
          const afterRestart = await submit();
          assert.equal(afterRestart.status, 503);
          assert.equal(afterRestart.body.error, 'evidence_frozen');
        } finally {
          await t.close();
          rmSync(state, { recursive: true, force: true });
        }
      });

      test('an entry stored past the head freezes the chain; a break written into the database is re-anchored as recorded, apart from what the check finds', async () => {
        const t = await startTestService(backend, { env: { AUDIT_SIGNING_KEY: key.pem } });
        try {
          const { workspace, key: apiKey } = await t.workspace();
          const db = t.service.ctx.db;
          const submit = () => call(t.url, 'POST', '/api/v1/holds', { key: apiKey, body: submission() });
          const reanchor = async (why: string) => {
            const run = await approvals(
              t.storage,
              ['evidence', 'reanchor', '--workspace', workspace.slug, '--reason', why, '--json'],
              { AUDIT_SIGNING_KEY: key.pem },
            );
            assert.equal(run.code, 0, run.stderr);
            return JSON.parse((await entriesOf(db, workspace.id)).at(-1)!.data);
          };
          assert.equal((await submit()).status, 201);
          const last = (await entriesOf(db, workspace.id)).at(-1)!;
          const forged = await storePastHead(db, workspace.id, last);
          // The write that meets it fails on the entry; the chain is checked at once, and frozen.
          assert.notEqual((await submit()).status, 201);
          await until('the chain to be frozen', async () =>
            (await call(t.url, 'GET', '/readyz')).body.evidence_frozen?.includes(workspace.slug),
          );
          assert.equal((await submit()).body.error, 'evidence_frozen');
          const past = await reanchor('an entry nobody signed');
          assert.deepEqual(past.break, { seq: forged.seq, reason: 'checkpoint_missing' });
          assert.deepEqual(past.appended_after, {
            seq: forged.seq,
            hash: forged.hash,
          });
          assert.equal(
            (await submit()).status,
            201,
            'the chain goes on after the entry, under a signature that names it',
          );
          assert.equal((await verify(t, apiKey)).valid, true);

          // A database writer writes a break of their own choosing: it freezes the chain, and the
          // re-anchor keeps it apart from what the command itself finds (nothing).
          await db.run(
            "UPDATE evidence_heads SET frozen_at = 1, frozen_seq = 99999, frozen_reason = 'none - scheduled key rotation' WHERE workspace_id = $1",
            [workspace.id],
          );
          // Read at the next write past FULL_CHECK_EVERY_MS, as a freeze another instance recorded is.
          t.clock.advance(FULL_CHECK_EVERY_MS);
          assert.equal((await submit()).body.error, 'evidence_frozen');
          const written = await reanchor('ops ticket 12');
          assert.equal(written.break, null);
          assert.deepEqual(written.recorded_break, { seq: 99999, reason: 'none - scheduled key rotation' });
          assert.equal((await submit()).status, 201);
        } finally {
          await t.close();
        }
      });
      test('a freeze recorded late, after an operator re-anchored the chain, does not freeze it again', async () => {
        // The service's clock a minute ahead of the operator's command: the order is not told by time.
        const clock = new TestClock();
        clock.offset = 60_000;
        const t = await startTestService(backend, { clock, env: { AUDIT_SIGNING_KEY: key.pem } });
        try {
          const { workspace, key: apiKey } = await t.workspace();
          const ctx = t.service.ctx;
          const submit = () => call(t.url, 'POST', '/api/v1/holds', { key: apiKey, body: submission() });
          assert.equal((await submit()).status, 201);
          const last = (await entriesOf(ctx.db, workspace.id)).at(-1)!;
          await storePastHead(ctx.db, workspace.id, last);
          // The check finds the break; the transaction that records the freeze is held back until the
          // operator has re-anchored, as a busy database or a slow instance would hold it.
          const freeze = await checkWithFreezeHeldBack(ctx, workspace.id);
          const run = await approvals(
            t.storage,
            [
              'evidence',
              'reanchor',
              '--workspace',
              workspace.slug,
              '--reason',
              'an entry nobody signed',
              '--json',
            ],
            { AUDIT_SIGNING_KEY: key.pem },
          );
          assert.equal(run.code, 0, run.stderr);
          await freeze.record();
          assert.equal((await submit()).status, 201, 'the re-anchored chain goes on');
          assert.deepEqual((await call(t.url, 'GET', '/readyz')).body.evidence_frozen ?? [], []);
        } finally {
          await t.close();
        }
      });
      test('a freeze found while another instance moves the head is still recorded, and stops that instance', async () => {
        // The workers' rounds an hour apart: no checkpoint is published, so B, which never saw the newer
        // head, has nothing that tells it the head went back.
        const env = { AUDIT_SIGNING_KEY: key.pem, DEADLINE_SWEEP_MS: '3600000' };
        const a = await startTestService(backend, { env });
        const b = await startTestService(backend, { storage: a.storage, env });
        try {
          const { workspace, key: apiKey } = await a.workspace();
          const ctx = a.service.ctx;
          const submitTo = (t: TestService) =>
            call(t.url, 'POST', '/api/v1/holds', { key: apiKey, body: submission() });
          assert.equal((await submitTo(a)).status, 201);
          const older = (await ctx.db.one<Record<string, unknown>>(
            'SELECT seq, hash, signed_at, key_id, signature FROM evidence_heads WHERE workspace_id = $1',
            [workspace.id],
          ))!;
          assert.equal((await submitTo(a)).status, 201);
          // A database writer moves the head back to the older signed one and cuts what came after.
          await ctx.db.transaction(async (tx) => {
            await tx.run('DELETE FROM evidence WHERE workspace_id = $1 AND seq > $2', [
              workspace.id,
              older.seq,
            ]);
            await tx.run(
              'UPDATE evidence_heads SET seq = $2, hash = $3, signed_at = $4, key_id = $5, signature = $6 WHERE workspace_id = $1',
              [workspace.id, older.seq, older.hash, older.signed_at, older.key_id, older.signature],
            );
          });
          // A, which signed past it, finds the cut; its freeze is held back while B (which never saw the
          // newer head) appends: the head moves, with no re-anchor.
          const freeze = await checkWithFreezeHeldBack(ctx, workspace.id);
          const byB = await submitTo(b);
          assert.equal(byB.status, 201, JSON.stringify(byB.body));
          await freeze.record();
          const row = await ctx.db.one<{ frozen_at: unknown }>(
            'SELECT frozen_at FROM evidence_heads WHERE workspace_id = $1',
            [workspace.id],
          );
          assert.notEqual(row!.frozen_at, null, 'the freeze A found is recorded for every instance');
          b.clock.advance(FULL_CHECK_EVERY_MS);
          assert.equal(
            (await submitTo(b)).body.error,
            'evidence_frozen',
            'B stops within FULL_CHECK_EVERY_MS',
          );
        } finally {
          await b.stop();
          await a.close();
        }
      });
    },
  );

  describe(`whole-chain checks on ${backend.name}`, { skip: backend.skip, timeout: 120_000 }, () => {
    test('a check goes on from where the last intact one ended, shares a walk with one running, and still finds a rewrite', async () => {
      const key = ed25519();
      const t = await startTestService(backend, { env: { AUDIT_SIGNING_KEY: key.pem } });
      try {
        const { workspace, key: apiKey } = await t.workspace();
        for (let i = 0; i < 5; i++)
          assert.equal(
            (await call(t.url, 'POST', '/api/v1/holds', { key: apiKey, body: submission() })).status,
            201,
          );
        // The entries' data read by the checks, counted on a context of their own.
        let read = 0;
        const db = t.service.ctx.db;
        const counting: typeof db = Object.create(db);
        counting.all = async (text, params) => {
          const rows = await db.all(text, params);
          if (/SELECT seq, prev_hash, type, occurred_at, data, hash FROM evidence/.test(text))
            read += rows.length;
          return rows as never;
        };
        // SQLite's reads of the whole chain come as arrays.
        if (db.arrays)
          counting.arrays = async (text, params) => {
            const rows = await db.arrays!(text, params);
            if (/SELECT seq, prev_hash, type, occurred_at, data, hash FROM evidence/.test(text))
              read += rows.length;
            return rows;
          };
        const ctx = { ...t.service.ctx, db: counting };

        const first = await verifyChain(ctx, workspace.id);
        assert.equal(first.valid, true);
        assert.equal(read, first.checked, 'the first check reads every entry');
        assert.equal(
          (await call(t.url, 'POST', '/api/v1/holds', { key: apiKey, body: submission() })).status,
          201,
        );
        read = 0;
        const second = await verifyChain(ctx, workspace.id);
        assert.equal(second.valid, true);
        assert.equal(second.checked, first.checked + 1);
        assert.equal(read, 1, 'only the entry appended since');
        read = 0;
        assert.equal((await verifyChain(ctx, workspace.id)).checked, second.checked);
        assert.equal(read, 0, 'nothing new, nothing read');

        const [a, b] = await Promise.all([verifyChain(ctx, workspace.id), verifyChain(ctx, workspace.id)]);
        assert.equal(a, b, 'two checks at once share one walk');

        // A rewrite under the part already checked moves every later hash: it is found all the same.
        await rewrite(db, workspace.id, 5, (data) => data.replace('"amount":120', '"amount":12'), null);
        read = 0;
        const third = await verifyChain(ctx, workspace.id);
        assert.equal(third.valid, false);
        assert.deepEqual(third.first_invalid, { seq: second.checked, reason: 'checkpoint_invalid' });
      } finally {
        await t.close();
      }
    });
  });

  describe(
    `rewriting with the key kept in the database on ${backend.name}`,
    { skip: backend.skip, timeout: 120_000 },
    () => {
      test('without AUDIT_SIGNING_KEY a re-signed rewrite fools the service, but not an earlier checkpoint', async () => {
        const t = await startTestService(backend);
        const dir = mkdtempSync(join(tmpdir(), 'approvals-trust-'));
        try {
          const { workspace, key: apiKey } = await t.workspace();
          await call(t.url, 'POST', '/api/v1/holds', { key: apiKey, body: submission() });
          const kept = await published(t, workspace.id);
          const keys = await wellKnown(t);

          const db = t.service.ctx.db;
          const stored = await db.one<{ id: string; private_key: string }>(
            'SELECT id, private_key FROM signing_keys WHERE private_key IS NOT NULL',
          );
          await rewrite(db, workspace.id, 5, (data) => data.replace('"amount":120', '"amount":12'), {
            pem: stored!.private_key,
            keyId: stored!.id,
          });
          await db.run('DELETE FROM evidence_checkpoints WHERE workspace_id = $1', [workspace.id]);
          assert.equal(
            (await call(t.url, 'GET', '/api/v1/audit/verify', { key: apiKey })).body.valid,
            true,
            'the service alone cannot tell: the forger holds its key (docs/security.md)',
          );

          const text = await exportText(t, workspace.id);
          const offline = await verifyEvidenceExport(text, { keys, checkpoint: kept });
          assert.equal(offline.valid, false);
          assert.deepEqual(offline.first_invalid, { seq: kept.seq, reason: 'rewritten' });

          const exportFile = join(dir, 'evidence.jsonl');
          const keyFile = join(dir, 'key.json');
          const keptFile = join(dir, 'kept.json');
          writeFileSync(exportFile, text);
          writeFileSync(keyFile, JSON.stringify(keys));
          writeFileSync(
            keptFile,
            JSON.stringify({ orgId: workspace.id, checkpoints: [kept], ...{ data: kept } }),
          );
          const fromExport = await approvals(t.storage, [
            'verify',
            '--export',
            exportFile,
            '--key',
            keyFile,
            '--against',
            keptFile,
          ]);
          assert.equal(fromExport.code, 3, fromExport.stderr);
          assert.match(fromExport.stderr, new RegExp(`rewritten at seq ${kept.seq}`));
          assert.equal(fromExport.stdout, '');
          const fromDatabase = await approvals(t.storage, [
            'verify',
            '--workspace',
            workspace.slug,
            '--against',
            keptFile,
          ]);
          assert.equal(fromDatabase.code, 3, fromDatabase.stderr);
          assert.match(fromDatabase.stderr, new RegExp(`rewritten at seq ${kept.seq}`));

          const intact = await approvals(t.storage, ['verify', '--export', exportFile, '--key', keyFile]);
          assert.equal(intact.code, 0, intact.stderr);
          assert.match(intact.stdout, /intact/);
        } finally {
          await t.close();
          rmSync(dir, { recursive: true, force: true });
        }
      });
    },
  );

  describe(
    `signing keys from configuration on ${backend.name}`,
    { skip: backend.skip, timeout: 120_000 },
    () => {
      test('AUDIT_TRUSTED_KEYS keeps a rotated key trusted; a key not listed is not', async () => {
        const storage = await backend.create();
        const old = ed25519();
        const next = ed25519();
        const first = await startTestService(backend, { storage, env: { AUDIT_SIGNING_KEY: old.pem } });
        const { key: apiKey } = await first.workspace();
        await call(first.url, 'POST', '/api/v1/holds', { key: apiKey, body: submission() });
        await first.stop();

        const rotated = await startTestService(backend, {
          storage,
          env: { AUDIT_SIGNING_KEY: next.pem, AUDIT_TRUSTED_KEYS: old.publicPem.replaceAll('\n', '\\n') },
        });
        try {
          assert.equal(
            (await call(rotated.url, 'GET', '/api/v1/audit/verify', { key: apiKey })).body.valid,
            true,
          );
          const keys = await wellKnown(rotated);
          assert.equal(keys.key_id, next.keyId);
          assert.deepEqual(
            keys.keys.map((k: { key_id: string }) => k.key_id),
            [old.keyId, next.keyId],
          );
        } finally {
          await rotated.stop();
        }
        const dropped = await startTestService(backend, { storage, env: { AUDIT_SIGNING_KEY: next.pem } });
        try {
          const result = (await call(dropped.url, 'GET', '/api/v1/audit/verify', { key: apiKey })).body;
          assert.equal(result.valid, false);
          assert.equal(result.first_invalid.reason, 'checkpoint_invalid');
        } finally {
          await dropped.close();
        }
      });
    },
  );
}

describe('audit key settings', () => {
  const storage = () => sqlite.create();

  test('AUDIT_TRUSTED_KEYS needs AUDIT_SIGNING_KEY, and holds Ed25519 public keys only', async () => {
    const s = await storage();
    try {
      const settings = { PORT: '0', LOG_LEVEL: 'silent', DATABASE_URL: '', ...s.env };
      const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({
        format: 'pem',
        type: 'spki',
      });
      for (const [env, message] of [
        [{ AUDIT_TRUSTED_KEYS: ed25519().publicPem }, /only counts with AUDIT_SIGNING_KEY/],
        [{ AUDIT_SIGNING_KEY: ed25519().pem, AUDIT_TRUSTED_KEYS: 'not a key' }, /PEM public keys/],
        [{ AUDIT_SIGNING_KEY: ed25519().pem, AUDIT_TRUSTED_KEYS: String(rsa) }, /not Ed25519/],
      ] as const) {
        await assert.rejects(startService(loadConfig({ ...settings, ...env })), message);
      }
    } finally {
      await s.drop();
    }
  });

  test('without AUDIT_SIGNING_KEY the service warns at start that a database writer can rewrite evidence', async () => {
    const s = await storage();
    try {
      for (const env of [{}, { AUDIT_SIGNING_KEY: ed25519().pem }] as Record<string, string>[]) {
        const server = await startServerProcess(s, { LOG_LEVEL: 'warn', ...env });
        server.child.kill('SIGTERM');
        await server.exited;
        if ('AUDIT_SIGNING_KEY' in env) assert.doesNotMatch(server.output(), /AUDIT_SIGNING_KEY is not set/);
        else assert.match(server.output(), /AUDIT_SIGNING_KEY is not set.*rewrite the evidence/);
      }
    } finally {
      await s.drop();
    }
  });
});
