/**
 * `evidence export|reanchor` and `verify`: the evidence chain, checked in the database or, with
 * `verify --export`, in an exported file with the SDK's offline check.
 */
import { once } from 'node:events';
import { createReadStream, existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import type { Checkpoint, EvidenceEntry } from '../../../packages/sdk/src/chain.ts';
import { type TrustedKeys, verifyEvidenceExport } from '../../../packages/sdk/src/evidence.ts';
import { verifySignedDecisions } from '../../../packages/sdk/src/signed-decision.ts';
import type { ChainBreak } from '../../services/chain-guard.ts';
import { reanchorChain } from '../../services/evidence.ts';
import { exportEvidence } from '../../services/export-evidence.ts';
import { verifyChain } from '../../services/verify-chain.ts';
import { type Answer, readText, required, UsageError, type Values } from '../usage.ts';
import type { LocalCommand } from './command.ts';
import { workspaceNamed } from './workspace.ts';

/** The break a re-anchor names, as found by the command, and as the database recorded it. */
function breakText(done: { break: ChainBreak | null; recorded_break: ChainBreak | null }): string {
  const text = (found: ChainBreak) => `${found.reason} at seq ${found.seq}`;
  const parts = [
    done.break ? `the break found (${text(done.break)})` : 'no break this command can see',
    ...(done.recorded_break ? [`the break recorded in the database (${text(done.recorded_break)})`] : []),
  ];
  return `${parts.join(' and ')} ${parts.length > 1 ? 'are' : 'is'}`;
}

/** A verification that ran and found the evidence not intact (exit 3). */
export class ChainInvalid extends Error {
  readonly result: object;
  constructor(result: object, reason: string) {
    super(reason);
    this.result = result;
  }
}

/** A verification's answer: the result when valid; otherwise exit 3 with the reason (and the result with --json). */
function verdict(
  result: { valid: boolean; checked: number; first_invalid: { seq: number; reason: string } | null },
  what: string,
): Answer {
  if (!result.valid) {
    const problem = result.first_invalid;
    throw new ChainInvalid(
      result,
      `${what} is not intact: ${problem ? `${problem.reason} at seq ${problem.seq}` : 'signature invalid'}`,
    );
  }
  return [result, `The ${what} is intact: ${result.checked} entries checked.`];
}

/** A checkpoint as kept: a checkpoints-list item, an evidence.checkpoint event body, or an export header. */
function readCheckpoint(file: string): Checkpoint {
  let value: unknown;
  try {
    value = JSON.parse(readText(file));
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`${file} is not JSON`);
  }
  const outer = value as { data?: unknown; checkpoint?: unknown } | null;
  const cp = (outer?.data ?? outer?.checkpoint ?? value) as Partial<Checkpoint> | null;
  if (
    !cp ||
    !Number.isSafeInteger(cp.seq) ||
    [cp.hash, cp.signed_at, cp.key_id, cp.signature].some((field) => typeof field !== 'string')
  )
    throw new UsageError(`${file} holds no checkpoint ({ seq, hash, signed_at, key_id, signature })`);
  const { seq, hash, signed_at, key_id, signature } = cp as Checkpoint;
  return { seq, hash, signed_at, key_id, signature };
}

/** `verify --export`: the SDK's offline check, with the key the auditor pinned; no database needed. */
export async function verifyExportFile(values: Values): Promise<Answer> {
  const file = required(values, 'export');
  const keyText = readText(required(values, 'key'));
  let keys: TrustedKeys = keyText;
  if (!keyText.trimStart().startsWith('-----BEGIN')) {
    try {
      keys = JSON.parse(keyText) as TrustedKeys;
    } catch {
      throw new UsageError('--key must be a PEM public key or the JSON of /.well-known/approvals-audit-key');
    }
  }
  if (!existsSync(file)) throw new UsageError(`cannot read ${file}`);
  const checkpoint = values.against === undefined ? undefined : readCheckpoint(values.against);
  const result = await verifyEvidenceExport(createReadStream(file, 'utf8'), { keys, checkpoint });
  return verdictWithSignatures(result, createReadStream(file, 'utf8'), `export ${file}`);
}

/**
 * The verdict on a chain, and when it is intact, on each passkey-signed decision in it, checked against
 * its member's enrolled key as the SDK's verifySignedDecisions does (docs/evidence.md).
 */
async function verdictWithSignatures(
  result: { valid: boolean; checked: number; first_invalid: { seq: number; reason: string } | null },
  exported: AsyncIterable<string | Buffer>,
  what: string,
): Promise<Answer> {
  if (!result.valid) return verdict(result, what);
  const signed = await verifySignedDecisions(entriesOf(exported));
  const bad = signed.invalid[0];
  const checked = {
    ...result,
    signed_decisions: signed,
    ...(bad
      ? { valid: false, first_invalid: { seq: bad.seq, reason: `signed_decision_${bad.reason}` } }
      : {}),
  };
  const [json, text] = verdict(checked, what);
  return [json, signed.checked > 0 ? `${text} ${signed.checked} passkey-signed decisions verified.` : text];
}

/** The entries of an export (its text in chunks), after its header line. */
async function* entriesOf(exported: AsyncIterable<string | Buffer>) {
  for await (const line of createInterface({ input: Readable.from(exported), crlfDelay: Infinity })) {
    const value = line.trim() ? (JSON.parse(line) as { seq?: unknown; type?: unknown }) : null;
    if (typeof value?.seq === 'number' && typeof value.type === 'string') yield value as EvidenceEntry;
  }
}

export const evidenceCommands: Record<string, LocalCommand> = {
  'evidence export': {
    maxWords: 2,
    async run(ctx, _words, values) {
      const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
      for await (const chunk of exportEvidence(ctx, workspace.id)) {
        if (!process.stdout.write(chunk)) await once(process.stdout, 'drain');
      }
      return null;
    },
  },
  'evidence reanchor': {
    maxWords: 2,
    async run(ctx, _words, values) {
      const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
      const reason = required(values, 'reason');
      const done = await reanchorChain(ctx, workspace.id, reason);
      ctx.chainGuard.flush();
      return [
        done,
        `Re-anchored the evidence of ${workspace.slug} at seq ${done.entry.seq}: ${breakText(done)} named there for good.`,
      ];
    },
  },
  verify: {
    maxWords: 1,
    async run(ctx, _words, values) {
      const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
      const against = values.against === undefined ? undefined : readCheckpoint(values.against);
      return verdictWithSignatures(
        await verifyChain(ctx, workspace.id, {}, against),
        exportEvidence(ctx, workspace.id),
        `evidence of ${workspace.slug}`,
      );
    },
  },
};
