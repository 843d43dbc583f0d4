/**
 * Call timeouts of the MCP proxy (issue 21): each registered server has `call_timeout_seconds`
 * (default 900), for allowed calls and approved executions alike; progress from the upstream restarts
 * the clock; a timeout is -32001 "Request timed out", never "cannot be reached"; an approved call that
 * was sent and never answered ends with outcome `unknown`: no retry advice, in the evidence, and its
 * approvers are told. The upstream is a slow tool of our own; the proxy's limit is 2 s, the tool 4 s.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client, ProtocolError, SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import { afterSending, callToolOptions } from '../src/mcp/upstream.ts';
import { applyConfig, exportConfig, parseConfig } from '../src/services/apply-config.ts';
import { ServiceError } from '../src/services/errors.ts';
import { failStaleExecutions, STALE_CLAIM_MS } from '../src/services/execute-approved.ts';
import { describeFailure } from '../src/services/proxy-call.ts';
import { getHold } from '../src/services/read-hold.ts';
import { updateHoldState } from '../src/store/holds.ts';
import { findMcpServerBySlug, type McpServer } from '../src/store/mcp-servers.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { call, rpcFailure } from './support/http.ts';
import { type SlowUpstream, startSlowUpstream } from './support/mcp-upstream.ts';
import { proxyClient } from './support/proxy-client.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { startSmtp, type TestSmtp } from './support/smtp.ts';
import { until } from './support/wait.ts';

const ADMIN = 'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n';
const ALLOW = 'tools:\n  - { connection: Slow, tool: slow, classification: allow }\n';

interface Envelope {
  status: string;
  reference: string;
  terminal: boolean;
  retryable: boolean;
  retry: string;
  message: string;
}

type ToolResult = { content: { type: string; text?: string }[]; isError?: boolean };

const envelopeOf = (result: unknown) =>
  (JSON.parse((result as ToolResult).content[1]!.text!) as { service: Envelope }).service;

const server = (callTimeoutSeconds: number): McpServer => ({
  id: 'mcp_test',
  workspaceId: 'ws',
  slug: 'slow',
  name: 'Slow',
  url: 'http://127.0.0.1:9/mcp',
  headersSealed: '',
  callTimeoutSeconds,
  createdAt: 0,
});

describe('the options of an upstream tools/call', () => {
  test("the time limit is the server's call_timeout_seconds (no fixed 60 s); progress restarts it", () => {
    for (const seconds of [1, 120, 900, 86_400]) {
      const options = callToolOptions(server(seconds));
      assert.equal(options.timeout, seconds * 1000);
      assert.equal(options.resetTimeoutOnProgress, true);
      // A handler is always given, so a progress token always goes upstream.
      assert.equal(typeof options.onprogress, 'function');
    }
  });

  test('progress reaches the client only when it asked; its cancellation is passed on', () => {
    const seen: number[] = [];
    const signal = new AbortController().signal;
    const options = callToolOptions(server(5), { signal, onProgress: (p) => seen.push(p.progress) });
    assert.equal(options.signal, signal);
    options.onprogress!({ progress: 1 });
    assert.deepEqual(seen, [1]);
    assert.doesNotThrow(() => callToolOptions(server(5)).onprogress!({ progress: 2 }));
  });

  test('what a failed call means: never sent, answered, or sent and never answered', async () => {
    const failing = async (error: unknown) => describeFailure(afterSending(error, server(2), undefined));
    const fetchFailed = (code: string) =>
      new TypeError('fetch failed', { cause: Object.assign(new Error(code), { code }) });
    const unknown = /may or may not have run/;

    const timedOut = await failing(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out'));
    assert.equal(timedOut.code, -32001);
    assert.equal(timedOut.outcome, 'unknown');
    assert.match(timedOut.message, /^Request timed out: .* within 2 seconds/);
    assert.match(timedOut.message, unknown);

    // A reset mid-request, an error page from a gateway, a stream that ended before the answer: it may have run.
    for (const error of [
      fetchFailed('UND_ERR_SOCKET'),
      fetchFailed('ECONNRESET'),
      new SdkError('CLIENT_HTTP_NOT_IMPLEMENTED' as SdkErrorCode, 'Error POSTing', { status: 502 }),
      new SdkError(SdkErrorCode.SendFailed, 'the upstream answered HTTP 502', { status: 502 }),
      new SdkError(SdkErrorCode.ConnectionClosed, 'the upstream ended the stream before it answered'),
    ]) {
      const lost = await failing(error);
      assert.equal(lost.code, -32000);
      assert.equal(lost.outcome, 'unknown');
      assert.match(lost.message, unknown);
    }
    // Refused before anything ran: "cannot be reached".
    for (const error of [
      fetchFailed('ECONNREFUSED'),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('getaddrinfo ENOTFOUND upstream.invalid'), { code: 'ENOTFOUND' }),
      new SdkError(SdkErrorCode.SendFailed, 'the upstream answered HTTP 401', { status: 401 }),
      new SdkError('CLIENT_HTTP_NOT_IMPLEMENTED' as SdkErrorCode, 'Error POSTing', { status: 401 }),
    ]) {
      assert.deepEqual(await failing(error), {
        code: -32000,
        message: 'The upstream MCP server cannot be reached',
      });
    }
    // The upstream's own JSON-RPC error: as it said.
    assert.deepEqual(await failing(new ProtocolError(-32602, 'Unknown tool: slow')), {
      code: -32602,
      message: 'Unknown tool: slow',
    });
  });

  test('an SDK timeout is -32001 "Request timed out", not -32000 "cannot be reached"', () => {
    const timedOut = describeFailure(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out'));
    assert.equal(timedOut.code, -32001);
    assert.match(timedOut.message, /^Request timed out/);
  });
});

for (const backend of backends) {
  describe(`MCP call timeouts on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let slow: SlowUpstream;
    let smtp: TestSmtp;
    const clients: Client[] = [];
    let labels = 0;
    const label = (what: string) => `${what}-${(labels += 1)}`;

    before(async () => {
      [slow, smtp] = await Promise.all([startSlowUpstream(), startSmtp()]);
      t = await startTestService(backend, {
        env: { ALLOW_PRIVATE_TARGETS: 'true', NOTIFY_RETRY_SCALE: '0.01', ...smtp.env },
      });
    });
    after(async () => {
      try {
        await Promise.all(clients.map((client) => client.close().catch(() => {})));
        await t?.close();
      } finally {
        await Promise.all([slow?.close(), smtp?.close()]);
      }
    });

    /** A workspace whose server `slow` (connection `Slow`) has the given call timeout. */
    const workspaceWith = (timeout: number | null, extra = '', url = slow.url) =>
      t.workspace({
        config: `${ADMIN}mcp_servers:\n  - { slug: slow, name: Slow, url: "${url}"${
          timeout === null ? '' : `, call_timeout_seconds: ${timeout}`
        } }\n${extra}`,
      });

    const connect = (key: string) => proxyClient(t.url, 'slow', key, clients);

    const slowCall = (
      client: Client,
      args: { label: string; seconds: number; progress?: boolean },
      options: Parameters<Client['callTool']>[1] = {},
    ) =>
      // The test client's own limit is far above the proxy's.
      client.callTool(
        { name: 'slow', arguments: args },
        { timeout: 30_000, ...options },
      ) as Promise<ToolResult>;

    const holdOf = async (workspace: Workspace, tool = 'slow') => {
      const row = await t.service.ctx.db.one<{ id: string }>(
        'SELECT id FROM holds WHERE workspace_id = $1 AND tool_name = $2 ORDER BY created_at DESC, id LIMIT 1',
        [workspace.id, tool],
      );
      return getHold(t.service.ctx, workspace.id, row!.id);
    };
    const finished = (workspace: Workspace, id: string) =>
      until(`hold ${id} to be run`, async () => {
        const hold = await getHold(t.service.ctx, workspace.id, id);
        return hold.status === 'executed' || hold.status === 'failed' ? hold : undefined;
      });
    const evidenceOf = async (workspace: Workspace, id: string) =>
      (
        await t.service.ctx.db.all<{ type: string; data: string }>(
          'SELECT type, data FROM evidence WHERE workspace_id = $1 ORDER BY seq',
          [workspace.id],
        )
      )
        .map((row) => ({ type: row.type, data: JSON.parse(row.data) as Record<string, any> }))
        .filter((entry) => entry.data.hold === id);
    const notificationsOf = (id: string) =>
      t.service.ctx.db.all<{ kind: string; channel: string; memberId: string | null }>(
        'SELECT kind, channel, member_id AS "memberId" FROM notifications WHERE hold_id = $1 ORDER BY created_at, id',
        [id],
      );

    // These run side by side (each has a workspace of its own); the last test moves the clock.
    describe('calls and settings', { concurrency: true }, () => {
      describe('allowed calls', { concurrency: true }, () => {
        test('slower than the timeout, no progress: -32001 "Request timed out" at the timeout', async () => {
          const { workspace, key } = await workspaceWith(2, ALLOW);
          const client = await connect(key);
          const name = label('no-progress');
          const started = Date.now();
          const error = await rpcFailure(slowCall(client, { label: name, seconds: 4 }));
          const took = Date.now() - started;
          assert.equal(error.code, -32001, error.message);
          assert.match(error.message, /Request timed out/);
          assert.match(error.message, /may or may not have run/);
          assert.deepEqual(error.data, { outcome: 'unknown' });
          assert.doesNotMatch(error.message, /cannot be reached/);
          assert.ok(took >= 1900 && took < 3500, `failed after ${took} ms`);
          // The request had reached the upstream, which heard of the cancellation.
          const upstream = await until('the upstream to stop', () =>
            slow.call(name)?.ended ? slow.call(name) : undefined,
          );
          assert.equal(upstream.ended, 'aborted');
          const hold = await holdOf(workspace);
          assert.equal(hold.status, 'auto_allowed');
          assert.equal(hold.execution?.status, 'failed');
          assert.deepEqual(
            { ...(hold.execution?.outcome as object), message: undefined },
            { code: -32001, message: undefined, outcome: 'unknown' },
          );
        });

        test('slower than the timeout but sending progress every second: runs to the end', async () => {
          const { key } = await workspaceWith(2, ALLOW);
          const client = await connect(key);
          const quiet = label('progress-quiet');
          const asked = label('progress-asked');
          const errors: Error[] = [];
          client.onerror = (error) => errors.push(error);
          const seen: number[] = [];
          const [withoutToken, withToken] = await Promise.all([
            // The client gives no progress token: the proxy asks for progress all the same.
            slowCall(client, { label: quiet, seconds: 3, progress: true }),
            slowCall(
              client,
              { label: asked, seconds: 3, progress: true },
              { onprogress: (progress) => seen.push(progress.progress) },
            ),
          ]);
          assert.deepEqual(withoutToken.content, [{ type: 'text', text: 'slept 3 s' }]);
          assert.deepEqual(withToken.content, [{ type: 'text', text: 'slept 3 s' }]);
          assert.equal(slow.call(quiet)?.progressToken, true, 'a progress token went upstream');
          assert.deepEqual(seen, [1, 2], 'relayed to the client that asked');
          assert.deepEqual(
            errors.filter((error) => /progress/i.test(error.message)),
            [],
            'nothing relayed to a request that did not ask',
          );
        });

        test('under the timeout: answered', async () => {
          const { key } = await workspaceWith(2, ALLOW);
          const client = await connect(key);
          const result = await slowCall(client, { label: label('fast'), seconds: 0.5 });
          assert.deepEqual(result.content, [{ type: 'text', text: 'slept 0.5 s' }]);
        });

        test('the proxy asks for progress on every call (the default server, no client token)', async () => {
          const { key } = await workspaceWith(null, ALLOW);
          const client = await connect(key);
          const name = label('token');
          await slowCall(client, { label: name, seconds: 0 });
          assert.equal(slow.call(name)?.progressToken, true);
        });
      });

      describe('approved calls', { concurrency: true }, () => {
        test('an execution that times out: outcome unknown, no retry advice, evidence, approvers told', async () => {
          // The approval's request mail goes at once (no digest window), so its outcome mail follows.
          const { workspace, key } = await workspaceWith(2, 'notifications: { digest_minutes: 0 }\n');
          const client = await connect(key);
          const name = label('execution');
          const held = envelopeOf(await slowCall(client, { label: name, seconds: 4 }));
          assert.equal(held.status, 'held');
          await decideAs(t, workspace.id, held.reference, 'approve');
          const started = Date.now();
          const hold = await finished(workspace, held.reference);
          assert.ok(Date.now() - started < 3500, 'recorded at about the timeout');
          assert.ok(slow.call(name), 'the request reached the upstream');

          // The record: failed, with outcome unknown, never "cannot be reached".
          assert.equal(hold.status, 'failed');
          const { body } = await call(t.url, 'GET', `/api/v1/holds/${held.reference}`, { key });
          assert.equal(body.execution.status, 'failed');
          assert.equal(body.execution.error.code, -32001);
          assert.equal(body.execution.error.outcome, 'unknown');
          assert.match(body.execution.error.message, /^Request timed out/);
          assert.match(body.execution.error.message, /may or may not have/);

          // The agent is told not to retry.
          const checked = envelopeOf(
            await client.callTool({ name: 'service_check_status', arguments: { reference: held.reference } }),
          );
          assert.equal(checked.status, 'error');
          assert.deepEqual([checked.terminal, checked.retryable, checked.retry], [true, false, 'never']);
          assert.match(checked.message, /may or may not have happened/);
          assert.match(checked.message, /Do not retry/);
          assert.doesNotMatch(checked.message, /ask again/);

          // What people see: the public status page and the hold's page in the app.
          const status = await (await fetch(`${t.url}/a/${held.reference}`)).text();
          assert.match(status, /Approved; whether it was carried out is unknown/);
          const { get, signIn } = appClient(t);
          const page = await get(await signIn(workspace, 'admin@acme.test'), `/app/holds/${held.reference}`);
          assert.match(page.text, /Approved; whether it was carried out is unknown/);
          assert.match(page.text, /it may or may not have happened/);

          // The evidence.
          const failed = (await evidenceOf(workspace, held.reference)).find((e) => e.type === 'hold.failed');
          assert.equal(failed?.data.error.outcome, 'unknown');
          assert.equal(failed?.data.error.code, -32001);

          // The approvers: an outcome mail queued with the change, and sent.
          const admin = await t.service.ctx.db.one<{ id: string }>(
            'SELECT id FROM members WHERE workspace_id = $1 AND email = $2',
            [workspace.id, 'admin@acme.test'],
          );
          const jobs = await notificationsOf(held.reference);
          // One outcome mail when it was approved, one when its outcome became unknown.
          assert.deepEqual(
            jobs.filter((job) => job.kind === 'outcome').map((job) => ({ ...job })),
            [
              { kind: 'outcome', channel: 'email', memberId: admin!.id },
              { kind: 'outcome', channel: 'email', memberId: admin!.id },
            ],
          );
          const mail = await until('the outcome-unknown mail', () =>
            smtp.messagesTo('admin@acme.test').find((m) => /^Outcome unknown/.test(m.subject)),
          );
          assert.match(mail.subject, /slow/);
          assert.match(mail.body, /may or may not have happened/);
          assert.match(mail.body, /will not run it again/);
        });

        test('an execution whose upstream is down before sending: failed, "cannot be reached"', async () => {
          const down = await startSlowUpstream();
          let closed = false;
          try {
            // Each mail at once: the test counts the approval's outcome mail.
            const { workspace, key } = await workspaceWith(
              2,
              'notifications: { digest_minutes: 0 }\n',
              down.url,
            );
            const client = await connect(key);
            const held = envelopeOf(await slowCall(client, { label: label('down'), seconds: 0 }));
            await down.close();
            closed = true;
            await decideAs(t, workspace.id, held.reference, 'approve');
            const hold = await finished(workspace, held.reference);
            assert.equal(hold.status, 'failed');
            assert.deepEqual(hold.execution?.outcome, {
              code: -32000,
              message: 'The upstream MCP server cannot be reached',
            });
            assert.equal(down.calls.length, 0);
            const checked = envelopeOf(
              await client.callTool({
                name: 'service_check_status',
                arguments: { reference: held.reference },
              }),
            );
            assert.deepEqual([checked.retryable, checked.retry], [true, 'new_request']);
            // Nobody is told anything more than the approval's outcome mail.
            const outcomes = (await notificationsOf(held.reference)).filter((job) => job.kind === 'outcome');
            assert.equal(outcomes.length, 1);
          } finally {
            if (!closed) await down.close();
          }
        });
      });

      describe('the setting', { concurrency: true }, () => {
        test('apply, export and apply again; evidence; defaults; validation in the file', async () => {
          const { workspace } = await workspaceWith(120);
          const stored = await findMcpServerBySlug(t.service.ctx.db, workspace.id, 'slow');
          assert.equal(stored?.callTimeoutSeconds, 120);
          const exported = await exportConfig(t.service.ctx, workspace);
          assert.deepEqual(exported.mcp_servers, [
            { slug: 'slow', name: 'Slow', url: slow.url, call_timeout_seconds: 120 },
          ]);
          await applyConfig(t.service.ctx, workspace, parseConfig(JSON.stringify(exported)));
          assert.deepEqual((await exportConfig(t.service.ctx, workspace)).mcp_servers, exported.mcp_servers);
          const entry = await t.service.ctx.db.one<{ data: string }>(
            "SELECT data FROM evidence WHERE workspace_id = $1 AND type = 'config.applied' ORDER BY seq DESC LIMIT 1",
            [workspace.id],
          );
          assert.equal(JSON.parse(entry!.data).mcp_servers.declared[0].call_timeout_seconds, 120);

          // Left out: the default, 15 minutes (and an export leaves the default out).
          await applyConfig(
            t.service.ctx,
            workspace,
            parseConfig(`mcp_servers:\n  - { slug: slow, name: Slow, url: "${slow.url}" }\n`),
          );
          assert.equal(
            (await findMcpServerBySlug(t.service.ctx.db, workspace.id, 'slow'))?.callTimeoutSeconds,
            900,
          );
          assert.deepEqual((await exportConfig(t.service.ctx, workspace)).mcp_servers, [
            { slug: 'slow', name: 'Slow', url: slow.url },
          ]);

          for (const value of ['0', '86401', '1.5', '"60"']) {
            const text = `mcp_servers:\n  - slug: slow\n    name: Slow\n    url: "${slow.url}"\n    call_timeout_seconds: ${value}\n`;
            assert.throws(
              () => parseConfig(text),
              (error: unknown) => {
                assert.ok(error instanceof ServiceError);
                assert.match(
                  error.message,
                  /^line 5: mcp_servers\.0\.call_timeout_seconds: must be a whole number of seconds from 1 to 86400$/,
                );
                return true;
              },
              value,
            );
          }
        });

        test("the app's form shows and edits it", async () => {
          const { workspace } = await workspaceWith(null);
          const { get, post, signIn } = appClient(t);
          const admin = await signIn(workspace, 'admin@acme.test');
          const list = await get(admin, '/app/admin/mcp-servers');
          assert.match(list.text, /Call timeout/);
          assert.match(list.text, /15 minutes/);
          const edit = await get(admin, '/app/admin/mcp-servers/slow');
          assert.match(edit.text, /name="call_timeout_seconds"[^>]*value="900"/);

          const save = (value: string) =>
            post(admin, '/app/admin/mcp-servers/slow', {
              name: 'Slow',
              url: slow.url,
              headers: '',
              call_timeout_seconds: value,
            });
          const refused = await save('0');
          assert.equal(refused.status, 422);
          assert.match(refused.text, /a whole number of seconds from 1 to 86400/);
          const saved = await save('45');
          assert.equal(saved.status, 303, saved.text.slice(0, 2000));
          assert.equal(
            (await findMcpServerBySlug(t.service.ctx.db, workspace.id, 'slow'))?.callTimeoutSeconds,
            45,
          );
          assert.match(
            (await get(admin, '/app/admin/mcp-servers/slow')).text,
            /name="call_timeout_seconds"[^>]*value="45"/,
          );
          assert.match((await get(admin, '/app/admin/mcp-servers')).text, /45 seconds/);
          // An empty field is the default.
          assert.equal((await save('')).status, 303);
          assert.equal(
            (await findMcpServerBySlug(t.service.ctx.db, workspace.id, 'slow'))?.callTimeoutSeconds,
            900,
          );
        });
      });
    });

    // Last: it moves the service's clock forward.
    test("a running execution is not taken for a dead instance's within its server's timeout", async () => {
      const { workspace, key } = await workspaceWith(null);
      const client = await connect(key);
      const name = label('long');
      const held = envelopeOf(await slowCall(client, { label: name, seconds: 0.5 }));
      await decideAs(t, workspace.id, held.reference, 'approve');
      await until('the call to run upstream', () => slow.call(name));
      // Past the old fixed three minutes, well within the server's 15.
      t.clock.advance(STALE_CLAIM_MS + 60_000);
      assert.equal(await failStaleExecutions(t.service.ctx), 0);
      const hold = await finished(workspace, held.reference);
      assert.equal(hold.status, 'executed');
      assert.deepEqual(
        (await evidenceOf(workspace, held.reference))
          .map((entry) => entry.type)
          .filter((type) => ['hold.executed', 'hold.failed'].includes(type)),
        ['hold.executed'],
      );

      // A claim that stays "running" (its instance died): unknown once three minutes past the
      // server's timeout, never before; its approvers are told.
      const running = async (age: number) => {
        const current = await getHold(t.service.ctx, workspace.id, held.reference);
        await updateHoldState(t.service.ctx.db, {
          ...current,
          status: 'approved',
          execution: { status: 'running', startedAt: t.clock.now() - age, completedAt: null, outcome: null },
        });
      };
      const limit = STALE_CLAIM_MS + 900_000;
      await running(limit - 60_000);
      assert.equal(await failStaleExecutions(t.service.ctx), 0);
      assert.equal((await getHold(t.service.ctx, workspace.id, held.reference)).status, 'approved');
      const before = (await notificationsOf(held.reference)).length;
      await running(limit + 1000);
      // The worker's own sweep may be first.
      await failStaleExecutions(t.service.ctx);
      const swept = await finished(workspace, held.reference);
      assert.equal(swept.status, 'failed');
      assert.deepEqual(
        { ...(swept.execution?.outcome as object), message: undefined },
        { code: -32001, message: undefined, outcome: 'unknown' },
      );
      assert.match((swept.execution?.outcome as { message: string }).message, /^Interrupted: /);
      const told = (await notificationsOf(held.reference)).slice(before);
      assert.deepEqual(
        told.map((job) => [job.kind, job.channel]),
        [['outcome', 'email']],
      );
    });
  });
}
