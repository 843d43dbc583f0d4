/** The workspace's evidence chain: is it intact, what was published, and the export to check it offline. */
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { exportEvidence } from '../../services/export-evidence.ts';
import { waitingIdsOf } from '../../services/inbox.ts';
import { newestCheckpoint } from '../../services/publish-checkpoints.ts';
import { verifyChain } from '../../services/verify-chain.ts';
import { layout } from '../layout.ts';
import { type PageDeps, sendPage } from '../respond.ts';
import { evidenceView } from '../views/evidence.ts';

export function evidencePages(app: FastifyInstance, { ctx }: PageDeps) {
  app.get('/app/evidence', async (request, reply) => {
    const session = request.appSession!;
    const result = await verifyChain(ctx, session.workspace.id);
    const published = await newestCheckpoint(ctx, session.workspace.id);
    const body = evidenceView(result, published);
    const pending = (await waitingIdsOf(ctx, session.member)).length;
    return sendPage(reply, layout({ title: 'Evidence', session, active: 'evidence', pending }, body));
  });

  app.get('/app/evidence/export', async (request, reply) => {
    const { workspace } = request.appSession!;
    const day = new Date(ctx.now()).toISOString().slice(0, 10);
    return reply
      .type('application/x-ndjson; charset=utf-8')
      .header('Content-Disposition', `attachment; filename="evidence-${workspace.slug}-${day}.jsonl"`)
      .header('Cache-Control', 'no-store')
      .send(Readable.from(exportEvidence(ctx, workspace.id)));
  });
}
