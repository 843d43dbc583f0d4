/** GET /.well-known/approvals-receipt-keys: the public keys that check hold receipts, as a JWK Set. */
import type { z } from 'zod';
import { defineRoute, headerRef } from '../route-table.ts';
import { receiptKeysSchema } from '../schemas.ts';

export const receiptKeysRoute = defineRoute({
  method: 'GET',
  url: '/.well-known/approvals-receipt-keys',
  operationId: 'getReceiptKeys',
  tags: ['Public', 'Holds'],
  summary: 'The public keys that check hold receipts (JWKS)',
  description:
    "The keys of the service's Ed25519 signer (the one that signs evidence checkpoints): a receipt counts when its header's `kid` is here and its signature checks with that key. Fetch them once and keep them; fetch again on a `kid` you do not know.",
  answers: {
    200: {
      description: 'The JWK Set.',
      headers: {
        'Cache-Control': { description: '`public, max-age=300`', schema: { type: 'string' } },
        'X-Request-Id': headerRef('X-Request-Id'),
      },
      schema: receiptKeysSchema,
    },
    500: 'Internal',
    503: 'Unavailable',
  },
  handler: async ({ answer }, { ctx }) => {
    // PublishedKey types its JWK loosely (audit-signer.ts); Node exports an Ed25519 key as OKP, Ed25519, x.
    const keys = (await ctx.signer.published()).map((key) => key.jwk);
    const body = { keys } as z.input<typeof receiptKeysSchema>;
    return answer(200, body, { 'Cache-Control': 'public, max-age=300' });
  },
});
