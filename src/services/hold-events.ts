/**
 * Wakes long-polls, the app's live updates and the workers when a hold changes. Within this process
 * directly; with several instances on one PostgreSQL, `broadcast` tells the others (LISTEN/NOTIFY,
 * src/store/postgres-events.ts), or the transaction that makes the change does (`toldWith`), and they
 * `deliver` it to their own listeners.
 */
import type { Statement } from '../store/statements.ts';

/** How an open wait ended: the hold changed (or its time is up), or the service shuts down. */
export type WaitOutcome = 'woken' | 'closed';

/** How many holds' last changes are told apart (a few seconds' worth at a high rate); older is "maybe". */
const CHANGES_KEPT = 1024;

export class HoldEvents {
  /** The open waits of each hold: what ends each (most holds have one, so an array, not a set). */
  private readonly waiters = new Map<string, ((outcome: WaitOutcome) => void)[]>();
  private readonly watchers = new Map<string, Set<(event: 'changed' | 'closed') => void>>();
  /** Called with the hold that changed, or with nothing when any may have (`wakeAll`). */
  private readonly everything = new Set<(holdId?: string, workspaceId?: string) => void>();
  private closed = false;
  /** Changes delivered here are numbered: `changedSince` tells whether a hold changed after a mark. */
  private delivered = 0;
  /** The number of the last change of each of the holds changed most recently, oldest first. */
  private readonly lastChange = new Map<string, number>();
  /** Changes up to this number are no longer told apart: any hold may have changed by then. */
  private forgotten = 0;

  /** Set when instances share a database: tells the other instances of a change published here. */
  broadcast: ((holdId: string, workspaceId: string, routine: boolean) => void) | null = null;
  /** Set with `broadcast`: the statement that tells the others, in a transaction (`toldWith`). */
  broadcastStatement: ((holdId: string, workspaceId: string, routine: boolean) => Statement) | null = null;

  /**
   * The statement that tells the other instances of a change, written in the transaction that makes
   * it: PostgreSQL delivers it as that commits, without a round trip of its own. Null when there are
   * none to tell. Once committed, the change is published `told`: to this instance's listeners only.
   */
  toldWith(holdId: string, workspaceId: string, routine: boolean): Statement | null {
    return this.broadcastStatement?.(holdId, workspaceId, routine) ?? null;
  }

  /**
   * A hold was created or changed here. `routine`: the change left nothing for the background work
   * (no outbox row, no decision, nothing to run): an allowed call and its result. Its readers are
   * woken, the workers are not.
   */
  publish(
    holdId: string,
    workspaceId: string,
    { routine = false, told = false }: { routine?: boolean; told?: boolean } = {},
  ): void {
    this.deliver(holdId, workspaceId, routine);
    if (!told) this.broadcast?.(holdId, workspaceId, routine);
  }

  /** A change, made here or on another instance: wakes its waiters and watchers. */
  deliver(holdId: string, workspaceId: string, routine = false): void {
    this.delivered += 1;
    this.lastChange.delete(holdId);
    this.lastChange.set(holdId, this.delivered);
    if (this.lastChange.size > CHANGES_KEPT) {
      const [oldest, number] = this.lastChange.entries().next().value!;
      this.lastChange.delete(oldest);
      this.forgotten = number;
    }
    if (!routine) for (const listener of this.everything) listener(holdId, workspaceId);
    for (const watch of this.watchers.get(workspaceId) ?? []) watch('changed');
    for (const end of [...(this.waiters.get(holdId) ?? [])]) end('woken');
  }

  /** Hears of every change to any hold that may leave work (workers, MCP sessions); returns the unsubscribe. */
  watchAll(listener: (holdId?: string, workspaceId?: string) => void): () => void {
    this.everything.add(listener);
    return () => this.everything.delete(listener);
  }

  /** Hears of every change to the workspace's holds (the app's live updates); returns the unsubscribe. */
  watch(workspaceId: string, listener: (event: 'changed' | 'closed') => void): () => void {
    if (this.closed) {
      listener('closed');
      return () => {};
    }
    const set = this.watchers.get(workspaceId) ?? new Set();
    set.add(listener);
    this.watchers.set(workspaceId, set);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.watchers.get(workspaceId) === set) this.watchers.delete(workspaceId);
    };
  }

  /**
   * Calls `then` once: when the hold changes, after `timeoutMs` (both `woken`), or at shutdown
   * (`closed`). Returns what ends the wait early, as `closed`. An open wait keeps this closure and its
   * timer only: with 10,000 waits open, a promise, a set and an abort listener each were a fifth of
   * their memory.
   */
  onChange(holdId: string, timeoutMs: number, then: (outcome: WaitOutcome) => void): () => void {
    if (this.closed) {
      then('closed');
      return () => {};
    }
    const end = (outcome: WaitOutcome) => {
      const ends = this.waiters.get(holdId);
      const at = ends?.indexOf(end) ?? -1;
      if (at < 0) return; // ended already
      clearTimeout(timer);
      if (ends!.length === 1) this.waiters.delete(holdId);
      else ends!.splice(at, 1);
      then(this.closed ? 'closed' : outcome);
    };
    const timer = setTimeout(end, Math.max(0, timeoutMs), 'woken');
    const ends = this.waiters.get(holdId);
    if (ends) ends.push(end);
    else this.waiters.set(holdId, [end]);
    return () => end('closed');
  }

  /** `onChange` as a promise; ended at once (`closed`) when `signal` aborts. */
  wait(holdId: string, timeoutMs: number, signal?: AbortSignal): Promise<WaitOutcome> {
    // Closed: `onChange` answers at once, before there is a `stop` to take off the signal.
    if (signal?.aborted || this.closed) return Promise.resolve('closed');
    return new Promise((resolve) => {
      const stop = this.onChange(holdId, timeoutMs, (outcome) => {
        signal?.removeEventListener('abort', stop);
        resolve(outcome);
      });
      signal?.addEventListener('abort', stop, { once: true });
    });
  }

  /** The number of the last change delivered: a mark to ask `changedSince` about later. */
  get mark(): number {
    return this.delivered;
  }

  /**
   * Whether the hold may have changed after `mark`: a reader that read it since then looks again
   * rather than wait for a change it may have missed (one told while it read).
   */
  changedSince(holdId: string, mark: number): boolean {
    return this.forgotten > mark || (this.lastChange.get(holdId) ?? 0) > mark;
  }

  /** Changes may have been missed (the link to the other instances was down): everyone looks again. */
  wakeAll(): void {
    this.forgotten = this.delivered += 1;
    for (const listener of this.everything) listener();
    for (const set of this.watchers.values()) for (const watch of [...set]) watch('changed');
    for (const ends of [...this.waiters.values()]) for (const end of [...ends]) end('woken');
  }

  get waiting(): number {
    let count = 0;
    for (const ends of this.waiters.values()) count += ends.length;
    return count;
  }

  /** Shutdown: every waiter answers now with the current record, and watchers stop. */
  close(): void {
    this.closed = true;
    for (const ends of [...this.waiters.values()]) for (const end of [...ends]) end('closed');
    for (const set of this.watchers.values()) for (const watch of [...set]) watch('closed');
    this.watchers.clear();
  }
}
