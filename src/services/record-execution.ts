/**
 * What the proxy ran, stored with its evidence entry. An approved call (run by the execution worker)
 * is recorded before the worker moves on; an allowed call's result is answered first and recorded
 * right after, with the other results of the next few milliseconds, in one transaction
 * (`ExecutionRecorder`): its hold was stored as running before the call went upstream, so a process
 * that dies in between leaves a running call, which the stale sweep marks failed with outcome unknown.
 */
import { canonicalJson } from '../../packages/sdk/src/canonical-json.ts';
import type { Hold } from '../domain/hold.ts';
import { type Sql, StorageUnavailableError } from '../store/db.ts';
import { findHold, updateHoldState } from '../store/holds.ts';
import { writeTogether } from '../store/statements.ts';
import type { ServiceContext } from './context.ts';
import { argumentsToRun } from './decision-changes.ts';
import { lockChain } from './evidence.ts';
import { sha256Hex } from './hashing.ts';
import { notifyUnknownOutcome } from './notifications.ts';

export interface ExecutionOutcome {
  status: 'executed' | 'failed';
  startedAt: number;
  outcome: unknown;
}

type ChainInMemory = Awaited<ReturnType<typeof lockChain>>;

/** At most this many results in one transaction; more wait for the next. */
const MAX_BATCH = 200;
/**
 * How long a result waits for others to share its transaction (one commit, one signed head for
 * them all): a session calling in sequence makes a call every few milliseconds. A read waiting for
 * the result, or the recorder closing, cuts the wait short.
 */
const GATHER_MS = 10;
/** When the database refuses a batch (it is down), the next try waits this long. */
const RETRY_MS = 1_000;

/**
 * Stores an execution in the caller's transaction, under its workspace's locked chain, once: a late
 * answer after the stale sweep (or the reverse) changes nothing. An approved hold becomes executed or
 * failed; an approved call whose outcome is unknown (sent, never answered) has its approvers told.
 * Returns the hold as it is now.
 */
async function storeExecution(
  tx: Sql,
  ctx: ServiceContext,
  chain: ChainInMemory,
  hold: Hold,
  execution: ExecutionOutcome,
): Promise<Hold> {
  const current = (await findHold(tx, hold.workspaceId, hold.id, true))!;
  if (current.execution && current.execution.status !== 'running') return current;
  const next: Hold = {
    ...current,
    status: current.status === 'approved' ? execution.status : current.status,
    execution: { ...execution, completedAt: ctx.now() },
  };
  await updateHoldState(tx, next);
  chain.append(`hold.${execution.status}`, {
    hold: hold.id,
    ...(execution.status === 'executed'
      ? {
          is_error: (execution.outcome as { isError?: unknown }).isError === true,
          result_sha256: sha256Hex(canonicalJson(execution.outcome)),
          // The arguments sent (an approved call's are its `hold.submitted`'s, or its approval's
          // `changed_arguments`, checked before it ran): an auditor matches them with that entry offline.
          arguments_sha256: sha256Hex(canonicalJson(argumentsToRun(hold))),
        }
      : { error: execution.outcome }),
  });
  const unknown = (execution.outcome as { outcome?: unknown } | null)?.outcome === 'unknown';
  if (execution.status === 'failed' && unknown && current.status === 'approved')
    await notifyUnknownOutcome(tx, ctx, next);
  return next;
}

/** Records one execution in a transaction of its own and returns the hold as it is now. */
export async function recordExecution(
  ctx: ServiceContext,
  hold: Hold,
  execution: ExecutionOutcome,
): Promise<Hold> {
  const done = await ctx.db.transaction(async (tx) => {
    const chain = await lockChain(tx, ctx, hold.workspaceId);
    const stored = await storeExecution(tx, ctx, chain, hold, execution);
    await writeTogether(tx, ctx.db.dialect, chain.writes());
    return stored;
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
}

/**
 * Allowed calls' results, recorded behind their answers: each result waits GATHER_MS for others, or
 * for the batch being written, then goes with every other waiting one in one transaction (one commit
 * and one signed head for many). Reads on this instance wait for a hold's queued result (`settled`,
 * which cuts the gathering short), so an agent that reads its hold after the answer sees it
 * executed. A batch the database cannot take (it is down) is tried again; a batch refused for
 * another reason is written result by result, and a result that still fails is given up (logged). A
 * result given up, or still queued when the process dies, is a running call for the stale sweep.
 */
export class ExecutionRecorder {
  private queued: Queued[] = [];
  private writing: Promise<void> | null = null;
  private readonly pending = new Map<string, Promise<void>>();
  private closing = false;
  /** Ends the wait for more results before the first batch is written, while it lasts. */
  private gathered: (() => void) | null = null;
  /** While the database refuses the queued results, reads do not wait for them. */
  private failing = false;
  /** Told when results could not be written (tried again, or given up). */
  onError: (error: unknown) => void = () => undefined;

  /** The context is read when writing: it holds this recorder. */
  private readonly context: () => ServiceContext;

  constructor(context: () => ServiceContext) {
    this.context = context;
  }

  record(hold: Hold, execution: ExecutionOutcome): void {
    let recorded!: () => void;
    this.pending.set(hold.id, new Promise<void>((resolve) => (recorded = resolve)));
    this.queued.push({ hold, execution, recorded });
    this.writing ??= this.writeQueued();
  }

  /**
   * Resolves once the hold's queued result (if any) is stored or given up; at once while the
   * database refuses the results (the read then answers with what is stored, or fails as it would).
   */
  settled(holdId: string): Promise<void> {
    if (this.failing) return Promise.resolve();
    const pending = this.pending.get(holdId);
    if (pending) this.gathered?.();
    return pending ?? Promise.resolve();
  }

  /** Whether this instance still holds the hold's result (the stale sweep leaves such a call alone). */
  holds(holdId: string): boolean {
    return this.pending.has(holdId);
  }

  /** Writes what is queued (one more try when the database refuses) and stops retrying. */
  async close(): Promise<void> {
    this.closing = true;
    this.gathered?.();
    await this.writing;
  }

  private async writeQueued(): Promise<void> {
    try {
      // The results that come within GATHER_MS go in the first batch too.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => this.gathered?.(), GATHER_MS);
        this.gathered = () => {
          clearTimeout(timer);
          this.gathered = null;
          resolve();
        };
      });
      while (this.queued.length > 0) {
        const batch = this.queued.splice(0, MAX_BATCH);
        try {
          await this.write(batch);
          this.failing = false;
          this.recorded(batch);
        } catch (error) {
          this.onError(error);
          if (!(error instanceof StorageUnavailableError)) {
            await this.oneByOne(batch);
          } else if (this.closing) {
            // Given up: the holds stay running, and the stale sweep marks them.
            for (const queued of batch) this.done(queued);
          } else {
            this.failing = true;
            this.queued.unshift(...batch);
            await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
          }
        }
      }
    } finally {
      this.writing = null;
    }
  }

  /** A batch refused for a reason of its own: each result alone, so one cannot hold back the rest. */
  private async oneByOne(batch: Queued[]) {
    for (const queued of batch) {
      try {
        await this.write([queued]);
        this.recorded([queued]);
      } catch (error) {
        this.onError(error);
        this.done(queued);
      }
    }
  }

  private recorded(batch: Queued[]) {
    for (const queued of batch) {
      this.done(queued);
      // An allowed call's result leaves nothing for the workers; one asked as a task is told to its
      // session (decision-notices.ts), which hears what is not routine.
      const routine = queued.hold.context.mcp_task !== true;
      this.context().holdEvents.publish(queued.hold.id, queued.hold.workspaceId, { routine });
    }
  }

  private done(queued: Queued) {
    this.pending.delete(queued.hold.id);
    queued.recorded();
  }

  /** One transaction; chains locked in workspace order, so two batches never wait on each other in a cycle. */
  private async write(batch: Queued[]): Promise<void> {
    const byWorkspace = new Map<string, Queued[]>();
    for (const queued of batch) {
      const list = byWorkspace.get(queued.hold.workspaceId) ?? [];
      list.push(queued);
      byWorkspace.set(queued.hold.workspaceId, list);
    }
    const ctx = this.context();
    // Lazy: the answers are out already, and a result lost with the machine leaves a running call.
    await ctx.db.transaction(
      async (tx) => {
        for (const workspaceId of [...byWorkspace.keys()].sort()) {
          // The workspace's entries are written together at the end, its head signed once.
          const chain = await lockChain(tx, ctx, workspaceId);
          for (const { hold, execution } of byWorkspace.get(workspaceId)!)
            await storeExecution(tx, ctx, chain, hold, execution);
          await writeTogether(tx, ctx.db.dialect, chain.writes());
        }
      },
      { lazy: true },
    );
  }
}
