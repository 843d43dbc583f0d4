/**
 * Traces (docs/settings.md, "Telemetry"), exported over OTLP/HTTP JSON to a receiver of the test's own:
 * a submission is traced through HTTP, the service and the database, in the agent's trace; a held MCP
 * call approved later is run upstream in that same trace, and the upstream receives `traceparent`; a
 * webhook receiver receives one; and no span carries a payload value, the API key or the upstream's
 * credential.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { tracingWanted } from '../src/telemetry/tracing.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { type RecordingUpstream, startRecordingUpstream } from './support/mcp-upstream.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { startSmtp, type TestSmtp } from './support/smtp.ts';
import { until } from './support/wait.ts';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
}

const SERVER = 2;
const CLIENT = 3;
const MARKER = 'marker-7f3a9c-not-for-traces';

/** Every span the receiver got, from the OTLP/HTTP JSON bodies. */
const spansOf = (otlp: Receiver): OtlpSpan[] =>
  otlp.requests.flatMap((request) =>
    (
      JSON.parse(request.body) as {
        resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
      }
    ).resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans)),
  );

const attribute = (span: OtlpSpan, key: string) =>
  Object.values(span.attributes.find((entry) => entry.key === key)?.value ?? {})[0];

/** A W3C traceparent of a trace the agent started: [header, trace id, span id]. */
function agentTrace(): [string, string, string] {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return [`00-${traceId}-${spanId}-01`, traceId, spanId];
}

const otlp = await startReceiver({
  script: { headers: { 'Content-Type': 'application/json' }, body: '{}' },
});
// The standard settings; read when the service starts (tracing is on for this whole process).
Object.assign(process.env, {
  OTEL_EXPORTER_OTLP_ENDPOINT: otlp.origin,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_BSP_SCHEDULE_DELAY: '20',
});
after(() => otlp.close());

test('no SDK starts without an OTLP endpoint, or when the standard settings turn it off', () => {
  assert.equal(tracingWanted({}), false);
  assert.equal(tracingWanted({ OTEL_SERVICE_NAME: 'approvals' }), false);
  assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.origin }), true);
  assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.origin}/v1/traces` }), true);
  assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.origin, OTEL_SDK_DISABLED: 'true' }), false);
  assert.equal(
    tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.origin, OTEL_TRACES_EXPORTER: 'none' }),
    false,
  );
});

for (const backend of backends) {
  describe(`traces on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let upstream: RecordingUpstream;
    let webhooks: Receiver;
    let smtp: TestSmtp;
    const clients: Client[] = [];

    before(async () => {
      upstream = await startRecordingUpstream();
      webhooks = await startReceiver();
      smtp = await startSmtp();
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true', ...smtp.env } });
    });
    after(async () => {
      await Promise.all(clients.map((client) => client.close().catch(() => {})));
      await t?.close();
      await upstream?.close();
      await webhooks?.close();
      await smtp?.close();
    });

    const spansIn = (traceId: string, expected: (spans: OtlpSpan[]) => boolean) =>
      until(`the spans of trace ${traceId}`, () => {
        const spans = spansOf(otlp).filter((span) => span.traceId === traceId);
        return expected(spans) ? spans : undefined;
      });

    test('a submission is traced through HTTP, the service and the database, in the agent trace', async () => {
      const { key } = await t.workspace();
      const [traceparent, traceId, agentSpanId] = agentTrace();
      const answer = await call(t.url, 'POST', '/api/v1/holds', {
        key,
        headers: { traceparent },
        body: submission({ arguments: { note: MARKER } }),
      });
      assert.equal(answer.status, 201);
      const spans = await spansIn(traceId, (found) =>
        ['POST /api/v1/holds', 'hold submit', 'transaction'].every((name) =>
          found.some((span) => span.name === name),
        ),
      );
      const server = spans.find((span) => span.name === 'POST /api/v1/holds')!;
      assert.equal(server.kind, SERVER);
      assert.equal(server.parentSpanId, agentSpanId, "the request's span continues the agent's");
      assert.equal(attribute(server, 'http.route'), '/api/v1/holds');
      assert.equal(Number(attribute(server, 'http.response.status_code')), 201);
      const submit = spans.find((span) => span.name === 'hold submit')!;
      assert.equal(submit.parentSpanId, server.spanId);
      assert.equal(attribute(submit, 'hold.id'), (answer.body as { id: string }).id);
      const transaction = spans.find((span) => span.name === 'transaction')!;
      assert.equal(transaction.parentSpanId, submit.spanId);
      assert.equal(transaction.kind, CLIENT);
      assert.ok(Number(attribute(transaction, 'db.statements')) >= 1);
      assert.equal(
        attribute(transaction, 'db.system.name'),
        backend.name === 'sqlite' ? 'sqlite' : 'postgresql',
      );

      // Where the agent waits for a decision: the wait route's span, in the agent's trace.
      const id = (answer.body as { id: string }).id;
      const wait = await call(t.url, 'POST', `/api/v1/holds/${id}/wait`, { key, headers: { traceparent } });
      assert.equal(wait.status, 200);
      const waited = await spansIn(traceId, (found) =>
        found.some((span) => span.name === 'POST /api/v1/holds/:id/wait'),
      );
      const waitSpan = waited.find((span) => span.name === 'POST /api/v1/holds/:id/wait')!;
      assert.equal(waitSpan.parentSpanId, agentSpanId);
    });

    test("a held MCP call, approved, is run upstream in the agent's trace; webhooks carry traceparent", async () => {
      const { workspace, key } = await t.workspace({
        config:
          'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n' +
          `webhook: { url: "${webhooks.url}" }\n` +
          `mcp_servers:\n  - { slug: rec, name: Recorder, url: "${upstream.url}",` +
          ' headers: { Authorization: "Bearer upstream-credential" } }\n' +
          'tools:\n  - { connection: Recorder, tool: record, classification: approval }\n',
      });
      const [traceparent, traceId] = agentTrace();
      const client = new Client({ name: 'traced-agent', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${t.url}/mcp/rec`), {
          requestInit: { headers: { Authorization: `Bearer ${key}`, traceparent } },
        }),
      );
      clients.push(client);
      const held = (await client.callTool({ name: 'record', arguments: { text: MARKER } })) as {
        content: { text: string }[];
      };
      const { reference } = (JSON.parse(held.content[1]!.text) as { service: { reference: string } }).service;
      assert.equal(upstream.calls.length, 0, 'nothing runs before the approval');

      await decideAs(t, workspace.id, reference, 'approve');
      await until('the approved call to reach the upstream', () =>
        upstream.calls.length ? true : undefined,
      );
      const sent = upstream.requests.find((request) => request.body?.method === 'tools/call')!;
      const header = String(sent.headers.traceparent);
      assert.match(
        header,
        new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`),
        "the upstream hears the agent's trace",
      );

      const spans = await spansIn(traceId, (found) =>
        found.some((span) => span.name === 'tools/call record'),
      );
      const upstreamCall = spans.find((span) => span.name === 'tools/call record')!;
      assert.equal(upstreamCall.kind, CLIENT);
      assert.ok(spans.some((span) => span.name === 'POST /mcp/:slug' || span.name.startsWith('POST /mcp')));
      // The request that carried it out is a child of the upstream call's span.
      const outbound = spans.find((span) => span.spanId === header.split('-')[2])!;
      assert.equal(outbound.kind, CLIENT);

      await until('a webhook delivery', () => (webhooks.requests.length ? true : undefined));
      for (const delivery of webhooks.requests)
        assert.match(String(delivery.headers.traceparent), /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    });

    test('an approver’s e-mail is traced: the notification, and its SMTP request as a client span', async () => {
      const { key } = await t.workspace({
        config:
          'members:\n  - { email: ann@acme.test, name: Ann, role: admin, channels: [email] }\n' +
          'notifications: { digest_minutes: 0 }\n',
      });
      const answer = await call(t.url, 'POST', '/api/v1/holds', {
        key,
        body: submission({ arguments: { note: MARKER } }),
      });
      assert.equal(answer.body.status, 'pending', answer.text);
      await smtp.next('ann@acme.test');
      const holdId = (answer.body as { id: string }).id;
      const [send, request] = await until('the e-mail’s spans', () => {
        const spans = spansOf(otlp);
        const notification = spans.find(
          (span) => span.name === 'notification send' && attribute(span, 'hold.id') === holdId,
        );
        const smtpSpan = spans.find(
          (span) => span.name === 'smtp send' && span.parentSpanId === notification?.spanId,
        );
        return notification && smtpSpan ? [notification, smtpSpan] : undefined;
      });
      assert.equal(attribute(send, 'notification.channel'), 'email');
      assert.equal(request.kind, CLIENT);
      assert.equal(attribute(request, 'server.address'), '127.0.0.1');
    });

    test('no span carries a payload value, an API key or an upstream credential', async () => {
      const everything = JSON.stringify(spansOf(otlp));
      assert.ok(everything.length > 0);
      for (const secret of [MARKER, 'upstream-credential', 'svc_live_', 'Bearer', 'ann@acme.test'])
        assert.ok(!everything.includes(secret), `no span mentions ${secret}`);
    });
  });
}
