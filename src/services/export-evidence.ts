/**
 * A workspace's evidence as JSON Lines: a header with the signed checkpoint, then every entry stored,
 * oldest first. The SDK's `verifyEvidenceExport` checks such a file offline, and finds entries that
 * the checkpoint does not cover.
 */
import { EVIDENCE_EXPORT_FORMAT, type EvidenceExportHeader } from '../../packages/sdk/src/chain.ts';
import { checkpointOf, findChainHead, lastEntrySeq, listEntries } from '../store/evidence.ts';
import type { ServiceContext } from './context.ts';

const PAGE = 1000;

export async function* exportEvidence(ctx: ServiceContext, workspaceId: string): AsyncGenerator<string> {
  // The last entry is read before the head: an append committing in between moves both, so every
  // entry exported that we wrote is covered by the checkpoint; one past it was not written by us.
  const last = await lastEntrySeq(ctx.db, workspaceId);
  const checkpoint = checkpointOf(await findChainHead(ctx.db, workspaceId));
  const header: EvidenceExportHeader = {
    format: EVIDENCE_EXPORT_FORMAT,
    orgId: workspaceId,
    exported_at: new Date(ctx.now()).toISOString(),
    checkpoint,
  };
  yield `${JSON.stringify(header)}\n`;
  const end = Math.max(last, checkpoint?.seq ?? 0);
  for (let next = 1; next <= end;) {
    const page = await listEntries(ctx.db, workspaceId, workspaceId, next, end, PAGE);
    if (page.length === 0) break;
    yield (
      page
        // The stored canonical text of `data` goes out as it is, with no parsing on the way.
        .map(
          ({ seq, prev_hash, orgId, type, occurred_at, data, hash }) =>
            `${JSON.stringify({ seq, prev_hash, orgId, type, occurred_at }).slice(0, -1)},"data":${data},"hash":${JSON.stringify(hash)}}`,
        )
        .join('\n') + '\n'
    );
    next = page[page.length - 1]!.seq + 1;
  }
}
