/**
 * What the proxy ran, stored with its evidence entry. An approved call (run by the execution worker)
 * is recorded before the worker moves on; an allowed call's result is answered first and recorded
 * right after (`ExecutionRecorder`), in the next transaction that writes its workspace's chain (most
 * often the next call's submission), or within a few milliseconds in one of its own: its hold was
 * stored as running before the call went upstream, so a process that dies in between leaves a
 * running call, which the stale sweep marks failed with outcome unknown.
 */
import { canonicalJson } from '../../packages/sdk/src/canonical-json.ts';
import type { Hold } from '../domain/hold.ts';
import { type Sql, StorageUnavailableError } from '../store/db.ts';
import { findHold, holdStateStatement, updateHoldState } from '../store/holds.ts';
import { writeTogether } from '../store/statements.ts';
import type { ServiceContext } from './context.ts';
import { argumentsToRun } from './decision-changes.ts';
import { type ChainInMemory, lockChain } from './evidence.ts';
import { sha256Hex } from './hashing.ts';
import { notifyUnknownOutcome } from './notifications.ts';

export interface ExecutionOutcome {
  status: 'executed' | 'failed';
  startedAt: number;
  outcome: unknown;
}

/** At most this many results in one transaction; more wait for the next. */
const MAX_BATCH = 200;
/**
 * How long a result waits for another write of its workspace's chain to take it (a session calling
 * in sequence makes a call every few milliseconds) before the recorder writes it in a transaction of
 * its own, with the others waiting then (one commit, one signed head for them all). A read waiting
 * for the result, or the recorder closing, cuts the wait short.
 */
const GATHER_MS = 10;
/**
 * How long a result taken by a transaction waits for it to commit before the recorder writes it
 * itself: that transaction was rolled back, or did not write its chain. Writing it twice changes
 * nothing (its hold, read under the chain's lock, shows it recorded).
 */
const TAKEN_MS = 1_000;
/** When the database refuses a batch (it is down), the next try waits this long. */
const RETRY_MS = 1_000;

/**
 * An execution's change to its hold, as it is now (`current`): null when its outcome is recorded
 * already (a late answer after the stale sweep, or the reverse), else the hold as it becomes and
 * its evidence entry. An approved hold becomes executed or failed; an allowed one keeps its status.
 */
function executionChange(ctx: ServiceContext, current: Hold, execution: ExecutionOutcome) {
  if (current.execution && current.execution.status !== 'running') return null;
  const next: Hold = {
    ...current,
    status: current.status === 'approved' ? execution.status : current.status,
    execution: { ...execution, completedAt: ctx.now() },
  };
  const entry = {
    type: `hold.${execution.status}`,
    data: {
      hold: current.id,
      ...(execution.status === 'executed'
        ? {
            is_error: (execution.outcome as { isError?: unknown }).isError === true,
            result_sha256: sha256Hex(canonicalJson(execution.outcome)),
            // The arguments sent (an approved call's are its `hold.submitted`'s, or its approval's
            // `changed_arguments`, checked before it ran): an auditor matches them with that entry offline.
            arguments_sha256: sha256Hex(canonicalJson(argumentsToRun(current))),
          }
        : { error: execution.outcome }),
    },
  };
  return { next, entry };
}

/**
 * Records one execution in a transaction of its own, under its workspace's locked chain, and returns
 * the hold as it is now. An approved call whose outcome is unknown (sent, never answered) has its
 * approvers told.
 */
export async function recordExecution(
  ctx: ServiceContext,
  hold: Hold,
  execution: ExecutionOutcome,
): Promise<Hold> {
  const done = await ctx.db.transaction(async (tx) => {
    const chain = await lockChain(tx, ctx, hold.workspaceId);
    // The call's own result, which the recorder had and this transaction took as it locked the chain,
    // is its outcome (the stale sweep meeting a result that came back just now): one outcome recorded.
    const current = chain.carriedHold(hold.id) ?? (await findHold(tx, hold.workspaceId, hold.id, true))!;
    const change = executionChange(ctx, current, execution);
    if (change) {
      await updateHoldState(tx, change.next);
      chain.append(change.entry.type, change.entry.data);
      const unknown = (execution.outcome as { outcome?: unknown } | null)?.outcome === 'unknown';
      if (execution.status === 'failed' && unknown && current.status === 'approved')
        await notifyUnknownOutcome(tx, ctx, change.next);
    }
    await writeTogether(tx, ctx.db.dialect, chain.writes());
    return change?.next ?? current;
  });
  ctx.holdEvents.publish(hold.id, hold.workspaceId);
  return done;
}

/**
 * A call's start as stored, moved forward: the stale sweep reads it as the age of a running call, so
 * a call that progress keeps alive past its timeout is not taken for a dead instance's (the start
 * recorded with the outcome is the first one).
 */
export async function renewRunningCall(ctx: ServiceContext, hold: Hold): Promise<void> {
  await ctx.db.transaction(async (tx) => {
    const current = await findHold(tx, hold.workspaceId, hold.id, true);
    if (current?.execution?.status !== 'running') return;
    await updateHoldState(tx, { ...current, execution: { ...current.execution, startedAt: ctx.now() } });
  });
}

/** How often a running call's stored start is moved forward while progress keeps it alive. */
const RENEW_RUNNING_MS = 60_000;

/** A running call's `onProgress` that renews its stored start at most every RENEW_RUNNING_MS. */
export function renewingOnProgress(ctx: ServiceContext, hold: Hold) {
  let renewedAt = hold.execution?.startedAt ?? ctx.now();
  let renewing = Promise.resolve();
  return {
    onProgress() {
      if (ctx.now() - renewedAt < RENEW_RUNNING_MS) return;
      renewedAt = ctx.now();
      renewing = renewing.then(() => renewRunningCall(ctx, hold)).catch(() => undefined);
    },
    /** Resolves when no renewal is in flight (before the outcome is recorded). */
    settled: () => renewing,
  };
}

interface Queued {
  hold: Hold;
  execution: ExecutionOutcome;
  recorded: () => void;
  /** When the recorder writes it itself (performance.now()), unless a transaction commits it first. */
  due: number;
  /** A transaction took it: it stays here until that one commits, or until it is due. */
  taken: boolean;
}

/**
 * Allowed calls' results, recorded behind their answers. A result waits for the next transaction that
 * writes its workspace's chain (`storeWaiting`, called as the chain is opened): the result's hold
 * change and evidence entry go with that transaction's own writes, under its commit and signed head,
 * so a session calling in sequence costs one transaction per call. A result that no such transaction
 * takes within GATHER_MS is written by the recorder, with every other one waiting, in one transaction.
 * Reads on this instance wait for a hold's queued result (`settled`, which has it written at once),
 * so an agent that reads its hold after the answer sees it executed. A batch the database cannot take
 * (it is down) is tried again; a batch refused for another reason is written workspace by workspace,
 * and a result that still fails is given up (logged). A result given up, or still queued when the
 * process dies, is a running call for the stale sweep.
 */
export class ExecutionRecorder {
  /** In the order they came. */
  private readonly queued = new Set<Queued>();
  private writing: Promise<void> | null = null;
  private readonly pending = new Map<string, Promise<void>>();
  private closing = false;
  /** A read or `close` wants every queued result written now. */
  private urgent = false;
  /** Ends the writer's wait, and when it ends (performance.now()), while it waits. */
  private wake: (() => void) | null = null;
  private wakeAt = Infinity;
  /** While the database refuses the queued results, reads do not wait for them. */
  private failing = false;
  /** Told when results could not be written (tried again, or given up). */
  onError: (error: unknown) => void = () => undefined;

  /** The context is read when writing: it holds this recorder. */
  private readonly context: () => ServiceContext;
  /** GATHER_MS, unless a test waits longer (so that only the next transaction, or a read, writes them). */
  private readonly gatherMs: number;

  constructor(context: () => ServiceContext, gatherMs = GATHER_MS) {
    this.context = context;
    this.gatherMs = gatherMs;
  }

  record(hold: Hold, execution: ExecutionOutcome): void {
    let recorded!: () => void;
    this.pending.set(hold.id, new Promise<void>((resolve) => (recorded = resolve)));
    const due = performance.now() + this.gatherMs;
    this.queued.add({ hold, execution, recorded, due, taken: false });
    if (due < this.wakeAt) this.wake?.();
    this.writing ??= this.writeQueued();
  }

  /**
   * Resolves once the hold's queued result (if any) is stored or given up; at once while the
   * database refuses the results (the read then answers with what is stored, or fails as it would).
   */
  settled(holdId: string): Promise<void> {
    if (this.failing) return Promise.resolve();
    const pending = this.pending.get(holdId);
    if (pending) this.writeNow();
    return pending ?? Promise.resolve();
  }

  /** Whether this instance still holds the hold's result (the stale sweep leaves such a call alone). */
  holds(holdId: string): boolean {
    return this.pending.has(holdId);
  }

  /** Writes what is queued (one more try when the database refuses) and stops retrying. */
  async close(): Promise<void> {
    this.closing = true;
    this.writeNow();
    await this.writing;
  }

  /**
   * In `tx`, which holds the workspace's chain lock, after `chain`'s head: the results waiting for the
   * workspace that no other transaction took. Each hold is read under the lock; its change goes with
   * the chain's next writes, after its entry, and the results leave the recorder once `tx` commits.
   * A transaction that rolls back, or never writes its chain, leaves them here until they are due.
   */
  async storeWaiting(tx: Sql, ctx: ServiceContext, workspaceId: string, chain: ChainInMemory) {
    const taken: Queued[] = [];
    for (const queued of this.queued) {
      if (queued.taken || queued.hold.workspaceId !== workspaceId) continue;
      queued.taken = true;
      queued.due = performance.now() + TAKEN_MS;
      taken.push(queued);
      if (taken.length === MAX_BATCH) break;
    }
    if (taken.length === 0) return;
    const states = [];
    const holds = [];
    for (const queued of taken) {
      const current = await findHold(tx, workspaceId, queued.hold.id, true);
      let change;
      try {
        // An allowed call's: nobody approved it, so there is nobody to tell of an unknown outcome.
        change = current && executionChange(ctx, current, queued.execution);
      } catch (error) {
        // A result that cannot be recorded must not fail the transaction that took it: given up.
        this.onError(error);
        this.done(queued);
        continue;
      }
      if (!change) continue;
      states.push(holdStateStatement(change.next));
      holds.push(change.next);
      chain.append(change.entry.type, change.entry.data);
    }
    // Recorded already (by the stale sweep, or a transaction that took them too): nothing to write.
    if (states.length === 0) tx.afterCommit(() => this.recorded(taken));
    else chain.carry(states, holds, () => this.recorded(taken));
  }

  /** Has the writer write every queued result now, taken or not. */
  private writeNow() {
    this.urgent = true;
    this.wake?.();
  }

  private async writeQueued(): Promise<void> {
    try {
      while (this.queued.size > 0) {
        await this.untilDue();
        const now = performance.now();
        const due = [...this.queued].filter((queued) => this.urgent || queued.due <= now);
        this.urgent = false;
        if (due.length === 0) continue;
        untake(due);
        const workspaces = workspacesToWrite(due);
        try {
          await this.write(workspaces);
          this.failing = false;
        } catch (error) {
          this.onError(error);
          if (!(error instanceof StorageUnavailableError)) {
            await this.oneByOne(workspaces, due);
          } else if (this.closing) {
            // Given up: the holds stay running, and the stale sweep marks them.
            for (const queued of due) this.done(queued);
          } else {
            this.failing = true;
            await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
          }
        }
      }
    } finally {
      this.writing = null;
    }
  }

  /** Until the first queued result is due, or `writeNow`. */
  private async untilDue() {
    if (this.urgent) return;
    this.wakeAt = Infinity;
    for (const queued of this.queued) this.wakeAt = Math.min(this.wakeAt, queued.due);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.wake?.(), this.wakeAt - performance.now());
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        this.wakeAt = Infinity;
        resolve();
      };
    });
  }

  /** A batch refused for a reason of its own: each workspace alone, so one cannot hold back the rest. */
  private async oneByOne(workspaces: string[], due: Queued[]) {
    for (const workspaceId of workspaces) {
      const own = due.filter((queued) => queued.hold.workspaceId === workspaceId);
      untake(own);
      try {
        await this.write([workspaceId]);
      } catch (error) {
        this.onError(error);
        for (const queued of own) this.done(queued);
      }
    }
  }

  private recorded(batch: Queued[]) {
    for (const queued of batch) {
      if (!this.done(queued)) continue;
      // An allowed call's result leaves nothing for the workers; one asked as a task is told to its
      // session (decision-notices.ts), which hears what is not routine.
      const routine = queued.hold.context.mcp_task !== true;
      this.context().holdEvents.publish(queued.hold.id, queued.hold.workspaceId, { routine });
    }
  }

  /** Whether it was still queued (given up, it may be committed by a transaction that took it). */
  private done(queued: Queued) {
    if (!this.queued.delete(queued)) return false;
    this.pending.delete(queued.hold.id);
    queued.recorded();
    return true;
  }

  /**
   * One transaction that writes the workspaces' chains, each taking its waiting results (`storeWaiting`);
   * chains locked in workspace order, so two batches never wait on each other in a cycle.
   */
  private async write(workspaces: string[]): Promise<void> {
    const ctx = this.context();
    // Lazy: the answers are out already, and a result lost with the machine leaves a running call.
    await ctx.db.transaction(
      async (tx) => {
        for (const workspaceId of workspaces) {
          const chain = await lockChain(tx, ctx, workspaceId);
          await writeTogether(tx, ctx.db.dialect, chain.writes());
        }
      },
      { lazy: true },
    );
  }
}

/**
 * The workspaces whose due results the recorder writes next, in one transaction: about MAX_BATCH
 * results' worth (the first workspace whatever its count), sorted, so that chain locks are taken in
 * one order. The others wait for the next round.
 */
export function workspacesToWrite(due: Pick<Queued, 'hold'>[]): string[] {
  const counts = new Map<string, number>();
  for (const { hold } of due) counts.set(hold.workspaceId, (counts.get(hold.workspaceId) ?? 0) + 1);
  const chosen: string[] = [];
  let results = 0;
  for (const [workspaceId, count] of counts) {
    if (chosen.length > 0 && results + count > MAX_BATCH) break;
    chosen.push(workspaceId);
    results += count;
  }
  return chosen.sort();
}

/**
 * For the recorder's own transaction to take them: those a transaction took and has not committed
 * (rolled back, slow, or never writing its chain) are written again, which changes nothing if it did.
 */
function untake(batch: Queued[]) {
  for (const queued of batch) queued.taken = false;
}
