/**
 * SSRF at save time (issue 19): `apply` refuses MCP upstream and webhook URLs whose literal IPv6 host
 * carries an internal IPv4 address or lies in a non-public range, on both backends. The classification
 * itself is unit-tested in src/net/internal-addresses.test.ts; connecting is in src/net/http-client.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { applyConfig, exportConfig, parseConfig } from '../src/services/apply-config.ts';
import { ServiceError } from '../src/services/errors.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends } from './support/backends.ts';
import { startTestService, type TestService } from './support/service.ts';

const HOSTS = [
  '[::ffff:0:7f00:1]',
  '[64:ff9b:1::7f00:1]',
  '[2002:7f00:1::]',
  '[2002:a9fe:a9fe::]',
  '[::127.0.0.1]',
  '[fec0::1]',
  '[100::1]',
];

for (const backend of backends) {
  describe(`internal targets refused at apply on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let workspace: Workspace;
    before(async () => {
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'false' } });
      ({ workspace } = await t.workspace());
    });
    after(() => t?.close());

    test('every MCP server URL and webhook URL of issue 19 is a field error, and nothing is stored', async () => {
      const servers = HOSTS.map(
        (host, index) => `  - { slug: s${index}, name: S${index}, url: "http://${host}/mcp" }`,
      );
      for (const host of HOSTS) {
        const file = `mcp_servers:\n${servers.join('\n')}\nwebhook: { url: "http://${host}/hook" }\n`;
        await assert.rejects(applyConfig(t.service.ctx, workspace, parseConfig(file)), (error: unknown) => {
          assert.ok(error instanceof ServiceError, String(error));
          assert.equal(error.code, 'validation_failed');
          assert.deepEqual(
            error.issues.map((issue) => [issue.field, issue.line]),
            [
              ...HOSTS.map((_, index) => [`mcp_servers.${index}.url`, index + 2]),
              ['webhook.url', HOSTS.length + 2],
            ],
          );
          for (const issue of error.issues) assert.match(issue.message, /internal address/);
          return true;
        });
      }
      const stored = await exportConfig(t.service.ctx, workspace);
      assert.deepEqual(stored.mcp_servers, []);
      assert.equal(stored.webhook, undefined);
    });
  });
}
