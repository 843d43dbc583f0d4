/**
 * A test reporter beside `spec` (package.json, `npm test`): node's closing `skipped` counts tests, and a
 * suite skipped whole (every PostgreSQL suite without TEST_DATABASE_URL, backends.ts) is neither shown
 * nor counted there. This one closes the run with how many suites were skipped, and why.
 */
import type { TestEvent } from 'node:test/reporters';

export default async function* skippedSuites(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const reasons = new Map<string, number>();
  for await (const event of source) {
    if (event.type !== 'test:pass' || event.data.details.type !== 'suite' || !event.data.skip) continue;
    const reason = event.data.skip === true ? 'skipped' : event.data.skip;
    reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
  }
  const total = [...reasons.values()].reduce((sum, count) => sum + count, 0);
  yield `ℹ suites skipped ${total}, their tests not counted above\n`;
  for (const [reason, count] of reasons) yield `ℹ   ${count} × ${reason}\n`;
}
