/**
 * The Python SDK's signed-decision check is tested on packages/python/tests/fixtures/signed_decisions.json,
 * made with Node's crypto. Here the TypeScript SDK reads every case of that file the same way, so the
 * two SDKs agree on what a valid signed decision is.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { EvidenceEntry } from '../packages/sdk/src/chain.ts';
import { verifySignedDecisions } from '../packages/sdk/src/signed-decision.ts';

const fixture = JSON.parse(
  readFileSync(new URL('../packages/python/tests/fixtures/signed_decisions.json', import.meta.url), 'utf8'),
) as {
  entries: EvidenceEntry[];
  cases: { name: string; seq: number; valid: boolean; reason?: string }[];
};

test('the TypeScript SDK reads each case of the Python fixture as the fixture says', async () => {
  const report = await verifySignedDecisions(fixture.entries);
  assert.equal(report.checked, fixture.cases.length);
  assert.deepEqual(
    report.invalid.map(({ seq, reason }) => ({ seq, reason })),
    fixture.cases.filter((c) => !c.valid).map(({ seq, reason }) => ({ seq, reason })),
  );
});
