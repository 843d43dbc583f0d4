/**
 * Database spans (docs/settings.md, "Telemetry"): one per transaction, with the number of statements it
 * ran (a span per statement would outnumber everything else), and one per statement run outside a
 * transaction. Spans name the operation (SELECT, INSERT…), never the statement's text or parameters.
 * Tracing off: the storage as it is.
 */
import type { Db, Sql } from '../store/db.ts';
import { describeSpan, inSpan, SpanKind, tracing } from './tracing.ts';

const operationOf = (text: string) => /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? 'SQL';

export function tracedDb(db: Db): Db {
  if (!tracing.on) return db;
  const system = db.dialect === 'postgres' ? 'postgresql' : 'sqlite';
  const statement =
    <K extends 'all' | 'one' | 'run' | 'exec'>(method: K) =>
    (text: string, params?: unknown[]) =>
      inSpan(
        operationOf(text),
        { 'db.system.name': system, 'db.operation.name': operationOf(text) },
        () => (db[method] as (text: string, params?: unknown[]) => Promise<unknown>).call(db, text, params),
        SpanKind.CLIENT,
      );
  return {
    dialect: db.dialect,
    all: statement('all') as Db['all'],
    one: statement('one') as Db['one'],
    run: statement('run') as Db['run'],
    exec: statement('exec') as Db['exec'],
    afterCommit: (then) => db.afterCommit(then),
    close: () => db.close(),
    transaction: (work, options) =>
      inSpan(
        'transaction',
        { 'db.system.name': system, 'db.operation.name': 'transaction' },
        () => {
          let statements = 0;
          return db
            .transaction((tx) => work(counting(tx, () => (statements += 1))), options)
            .finally(() => describeSpan({ 'db.statements': statements }));
        },
        SpanKind.CLIENT,
      ),
  };
}

/** `tx` counting the statements it runs. */
function counting(tx: Sql, count: () => void): Sql {
  return {
    all: (text, params) => (count(), tx.all(text, params)),
    one: (text, params) => (count(), tx.one(text, params)),
    run: (text, params) => (count(), tx.run(text, params)),
    exec: (text) => (count(), tx.exec(text)),
    afterCommit: (then) => tx.afterCommit(then),
  };
}
