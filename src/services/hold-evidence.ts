/**
 * Issue 37: a hold's row is not evidence. A database writer can change its arguments or flip its
 * status to approved; the chain they cannot change unseen (its head is signed, and checked before the
 * signer extends it: chain-guard.ts). So before an approved call is made, and before an agent is
 * told a hold is approved, the hold is checked against its own entries, found by the seqs stored on
 * its row when they were appended (no scan): its `hold.submitted` (the call: connection, tool,
 * canonical arguments) and the `hold.approved` that approved it (the last approval required). With
 * four eyes and more, `hold.approved` lists the earlier approvals' `hold.approval_recorded` entries
 * (`approvals_before`): each must be this hold's, and by as many distinct members as the submission
 * required, so approvals counted up in the row alone do not add up. A seq a writer changed finds an
 * entry that is not this hold's, or of another type: the check fails. An approval with changes
 * carries the changed arguments (`changed_arguments`): they must be the row's, and are what runs.
 *
 * Each entry read is checked as stored: its hash recomputed from its data, and linked to from the
 * entry after it, or it is the head the caller locked (and the signer checked). Rewriting one entry
 * and the links after it up to the head is a rewrite of the chain, which the signer's check and
 * `verify` catch (docs/evidence.md, "Who can rewrite the evidence").
 */
import { canonicalJson } from '../../packages/sdk/src/canonical-json.ts';
import { entryHashInputWithData } from '../../packages/sdk/src/chain.ts';
import type { Hold } from '../domain/hold.ts';
import type { Sql } from '../store/db.ts';
import { entriesAt, holdEntriesBetween } from '../store/evidence.ts';
import { holdEvidenceSeqs } from '../store/holds.ts';
import { sha256Hex } from './hashing.ts';

/** Why a hold's record is not as its evidence has it. */
export type EvidenceMismatch =
  /** No `hold.submitted` of this hold where its row says, or that entry is not as stored in the chain. */
  | 'submission_not_in_evidence'
  /** The call (connection, MCP server, tool, arguments) is not the one its `hold.submitted` records. */
  | 'call_not_as_submitted'
  /** No `hold.approved` of this hold where its row says (or none at all), or not as stored in the chain. */
  | 'approval_not_in_evidence'
  /** The chain already records the call as run, failed or refused: a row set back to approved (a replay). */
  | 'already_run';

/** The call as the evidence records it: what may be sent. */
export interface SubmittedCall {
  connection: string;
  toolName: string;
  arguments: Record<string, unknown>;
}

export type EvidenceCheck =
  { ok: true; call: SubmittedCall; approvedSeq: number } | { ok: false; reason: EvidenceMismatch };

interface EntryData {
  hold?: unknown;
  connection?: unknown;
  tool_name?: unknown;
  arguments?: unknown;
  status?: unknown;
  approvals_required?: unknown;
  verdict?: unknown;
  approvals?: { required?: unknown; received?: unknown };
  approvals_before?: unknown;
  changed_arguments?: unknown;
  member?: { id?: unknown };
  on_behalf_of?: { id?: unknown };
}

/**
 * Checks an approved hold against its entries, at or before `head` (the chain's head, locked by the
 * caller's transaction, or read in it). Two reads by primary key; three with four eyes and more.
 */
export async function checkApprovedHold(
  sql: Sql,
  hold: Hold,
  head: { seq: number; hash: string },
): Promise<EvidenceCheck> {
  const { submittedSeq, approvedSeq } = await holdEvidenceSeqs(sql, hold.workspaceId, hold.id);
  if (submittedSeq === null) return { ok: false, reason: 'submission_not_in_evidence' };
  const seqs = approvedSeq === null ? [submittedSeq] : [submittedSeq, approvedSeq];
  const entries = await entriesAt(sql, hold.workspaceId, seqs);
  const found = entryFinder(hold, entries, head);
  const submitted = found(submittedSeq, 'hold.submitted');
  if (!submitted || submitted.status !== 'pending')
    return { ok: false, reason: 'submission_not_in_evidence' };
  const call = callOf(submitted);
  if (!sameCall(call, hold)) return { ok: false, reason: 'call_not_as_submitted' };
  const approved =
    approvedSeq !== null && approvedSeq > submittedSeq ? found(approvedSeq, 'hold.approved') : null;
  if (
    !approved ||
    approved.verdict !== 'approve' ||
    approved.approvals?.required !== submitted.approvals_required ||
    Number(approved.approvals?.received) < Number(submitted.approvals_required)
  )
    return { ok: false, reason: 'approval_not_in_evidence' };
  // Four eyes and more: the earlier approvals are entries of this hold too, each by another member.
  const before = approved.approvals_before;
  const counted: EntryData[] = [];
  if (Number(submitted.approvals_required) > 1 && before !== undefined) {
    if (!Array.isArray(before) || !before.every((seq) => Number.isSafeInteger(seq) && seq > submittedSeq))
      return { ok: false, reason: 'approval_not_in_evidence' };
    entries.push(...(await entriesAt(sql, hold.workspaceId, before as number[])));
    const members = new Set([approverOf(approved)]);
    for (const seq of before as number[]) {
      const earlier = seq < approvedSeq! ? found(seq, 'hold.approval_recorded') : null;
      if (!earlier || earlier.verdict !== 'approve') return { ok: false, reason: 'approval_not_in_evidence' };
      members.add(approverOf(earlier));
      counted.push(earlier);
    }
    if (members.size < Number(submitted.approvals_required))
      return { ok: false, reason: 'approval_not_in_evidence' };
  }
  // Approved with changes: the changes are in the first approval counted (an edit restarts the count,
  // so a later one carries none), and the row's changed arguments are those.
  const edits = [...counted, approved].map((entry) => entry.changed_arguments);
  if (edits.slice(1).some((edit) => edit !== undefined))
    return { ok: false, reason: 'approval_not_in_evidence' };
  const toRun = (edits[0] ?? call.arguments) as Record<string, unknown>;
  if (canonicalJson(toRun) !== canonicalJson(hold.changedArguments ?? hold.arguments))
    return { ok: false, reason: 'call_not_as_submitted' };
  return { ok: true, call, approvedSeq: approvedSeq! };
}

/**
 * Checks a hold the rules allowed at submission against its `hold.submitted` entry, at or before
 * `head` (as `checkApprovedHold`): the entry says `auto_allowed`, and the call is the hold's.
 */
export async function checkAllowedHold(
  sql: Sql,
  hold: Hold,
  head: { seq: number; hash: string },
): Promise<boolean> {
  const { submittedSeq } = await holdEvidenceSeqs(sql, hold.workspaceId, hold.id);
  if (submittedSeq === null) return false;
  const entries = await entriesAt(sql, hold.workspaceId, [submittedSeq]);
  const submitted = entryFinder(hold, entries, head)(submittedSeq, 'hold.submitted');
  return submitted?.status === 'auto_allowed' && sameCall(callOf(submitted), hold);
}

/**
 * Finds an entry of the hold among `entries` by seq and type, as stored: its hash recomputed from its
 * data, and linked to from the entry after it, or it is `head`. Null for anything else.
 */
function entryFinder(
  hold: Hold,
  entries: Awaited<ReturnType<typeof entriesAt>>,
  head: { seq: number; hash: string },
) {
  return (seq: number | null, type: string): EntryData | null => {
    const entry = entries.find((candidate) => candidate.seq === seq);
    if (!entry || entry.type !== type || entry.seq > head.seq) return null;
    const hash = sha256Hex(entryHashInputWithData({ ...entry, orgId: hold.workspaceId }, entry.data));
    const linked = entry.seq === head.seq ? head.hash === entry.hash : entry.nextPrevHash === entry.hash;
    if (hash !== entry.hash || !linked) return null;
    const data = JSON.parse(entry.data) as EntryData;
    return data.hold === hold.id ? data : null;
  };
}

const callOf = (submitted: EntryData): SubmittedCall => ({
  connection: String(submitted.connection),
  toolName: String(submitted.tool_name),
  arguments: (submitted.arguments ?? {}) as Record<string, unknown>,
});

const sameCall = (call: SubmittedCall, hold: Hold) =>
  call.connection === hold.connection &&
  call.toolName === hold.toolName &&
  canonicalJson(call.arguments) === canonicalJson(hold.arguments);

/** What the chain records when a call ends: once one is there, the call is never run again. */
const RUN_TYPES = ['hold.executed', 'hold.failed', 'hold.execution_refused'];

/**
 * Whether the chain records the hold's call as run (or failed, or refused) after its approval, up to
 * `head`: a row set back to approved and not run is a replay. Reads the entries after the approval
 * (its call runs right after it, so they are few) that name the hold.
 */
export async function runInEvidence(sql: Sql, hold: Hold, approvedSeq: number, head: { seq: number }) {
  const found = await holdEntriesBetween(
    sql,
    hold.workspaceId,
    hold.id,
    { after: approvedSeq, upTo: head.seq },
    RUN_TYPES,
  );
  return found.some((entry) => (JSON.parse(entry.data) as EntryData).hold === hold.id);
}

/** Whose approval an entry is: the member's, or the member a delegate decided for. */
const approverOf = (data: EntryData) => String(data.on_behalf_of?.id ?? data.member?.id);
