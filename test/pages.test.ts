/** The public status page, operations endpoints and documentation. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { startTestService, type TestService } from './support/service.ts';

const BRANDED = `name: Acme <Payments>
branding: { logo_url: "https://cdn.acme.test/logo.png", accent_color: "#0a7" }
members:
  - { email: admin@acme.test, name: Admin, role: admin }
`;

for (const backend of backends) {
  describe(`pages on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    before(async () => {
      t = await startTestService(backend);
    });
    after(() => t?.close());

    test('the status page shows status, times and branding, never tool, arguments or agent', async () => {
      const { key } = await t.workspace({ config: BRANDED });
      const body = submission({
        tool_name: 'secret_tool_name',
        arguments: { iban: 'DE-SECRET-IBAN' },
        agent_identity: { id: 'secret-agent-id', label: 'Secret Label' },
        context: { ticket: 'SECRET-TICKET' },
      });
      const { body: created } = await call(t.url, 'POST', '/api/v1/holds', { key, body });
      const page = await call(t.url, 'GET', new URL(created.status_url).pathname);
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type')!, /^text\/html/);
      assert.match(page.text, /Waiting for a decision/);
      assert.match(page.text, /Acme &lt;Payments&gt;/);
      assert.match(page.text, /https:\/\/cdn\.acme\.test\/logo\.png/);
      assert.match(page.text, /--accent:#0a7/);
      // Times in UTC, saying so: a status page does not know its reader's zone.
      assert.match(
        page.text,
        /<dt>Requested<\/dt><dd><time datetime="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/time>/,
      );
      assert.match(
        page.text,
        /<dt>Deadline<\/dt><dd><time datetime="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/time>/,
      );
      for (const secret of [
        'secret_tool_name',
        'DE-SECRET-IBAN',
        'secret-agent-id',
        'Secret Label',
        'SECRET-TICKET',
      ]) {
        assert.ok(!page.text.includes(secret), secret);
      }
      assert.match(page.headers.get('content-security-policy')!, /default-src 'none'/);
      assert.equal(page.headers.get('cache-control'), 'no-store');
    });

    test('unknown and malformed references get the very same 404 page', async () => {
      const unknown = await call(t.url, 'GET', `/a/svc_pa_${'Z'.repeat(22)}`);
      const malformed = await call(t.url, 'GET', '/a/not-a-reference');
      assert.equal(unknown.status, 404);
      assert.equal(malformed.status, 404);
      assert.equal(unknown.text, malformed.text);
    });

    test('healthz, readyz and Prometheus metrics', async () => {
      assert.deepEqual((await call(t.url, 'GET', '/healthz')).body, { status: 'ok' });
      assert.deepEqual((await call(t.url, 'GET', '/readyz')).body, { status: 'ok' });
      const metrics = await call(t.url, 'GET', '/metrics');
      assert.equal(metrics.status, 200);
      assert.match(metrics.text, /approvals_http_request_duration_seconds_bucket/);
      assert.match(metrics.text, /approvals_holds_submitted_total\{status="pending"\} \d+/);
      assert.match(metrics.text, /approvals_waiters 0/);
    });

    test('every answer has a request id; a sane one from the caller is kept', async () => {
      const mine = await call(t.url, 'GET', '/healthz', { headers: { 'x-request-id': 'trace-123' } });
      assert.equal(mine.headers.get('x-request-id'), 'trace-123');
      const odd = await call(t.url, 'GET', '/healthz', {
        headers: { 'x-request-id': 'bad id\twith spaces' },
      });
      assert.match(odd.headers.get('x-request-id')!, /^[0-9a-f-]{36}$/);
    });

    test('documentation under /docs and the OpenAPI document', async () => {
      const index = await call(t.url, 'GET', '/docs');
      assert.equal(index.status, 200);
      const holds = await call(t.url, 'GET', '/docs/holds');
      assert.equal(holds.status, 200);
      assert.match(holds.text, /idempotency_key/);
      // The SDK's README is served among the docs, and the index links to it there.
      assert.match(index.text, /href="\/docs\/sdk"/);
      const sdk = await call(t.url, 'GET', '/docs/sdk');
      assert.equal(sdk.status, 200);
      assert.match(sdk.text, /verifyEvidenceExport/);
      const openapi = await call(t.url, 'GET', '/docs/openapi.json');
      assert.equal(openapi.body.openapi, '3.1.0');
      assert.ok(openapi.body.paths['/api/v1/holds']);
      assert.equal(openapi.body.paths['/api/v1/reports/activity'].get['x-rate-limit-bucket'], 'v1-reports');
      assert.equal((await call(t.url, 'GET', '/docs/../package')).status, 404);
    });
  });
}
