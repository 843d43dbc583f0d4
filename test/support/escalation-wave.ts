/**
 * An escalation wave (issue 39: 89 separate e-mails within a minute), measured: `holds` pending holds
 * escalate within the same minute to one member, and the mails that reach that member through a real
 * SMTP server are counted. For test/digests.test.ts and the bench (bench/inbox.ts): one service on
 * `backend`, its clock standing still and moved past the escalation and the digest window.
 */
import { submitHold } from '../../src/services/submit-hold.ts';
import type { Backend } from './backends.ts';
import { notificationsDone, startTestService, TestClock } from './service.ts';
import { startSmtp } from './smtp.ts';

const MIN = 60_000;
const ESCALATED_TO = 'ann@acme.test';

export interface WaveMails {
  holds: number;
  /** Mails to the member the wave escalated to: requests, reminders, digests. */
  mails: number;
  /** Their subjects, in the order they arrived. */
  subjects: string[];
  /** Decision links (`/d/<token>`) in those mails. */
  links: number;
}

/**
 * Submits `holds` holds for the admin, escalates them all to Ann an hour later, waits past Ann's digest
 * window, and counts Ann's mails. `digestMinutes`: the workspace's window (0: each mail at once).
 */
export async function escalationWaveMails(
  backend: Backend,
  { holds = 100, digestMinutes = 5 }: { holds?: number; digestMinutes?: number } = {},
): Promise<WaveMails> {
  const smtp = await startSmtp();
  const t = await startTestService(backend, { clock: new TestClock({ at: Date.now() }), env: smtp.env });
  try {
    const { workspace } = await t.workspace({
      config: `
notifications: { digest_minutes: ${digestMinutes} }
members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: ${ESCALATED_TO}, name: Ann, role: approver }
tools: [{ connection: SDK, tool: payments.send, classification: approval }]
rules:
  - { name: Payments, tool: payments.send, effect: approval, approvers: [admin@acme.test], timeout_minutes: 240, escalate: [{ after: 1h, to: [${ESCALATED_TO}] }] }
`,
    });
    for (let i = 0; i < holds; i++) {
      await submitHold(
        t.service.ctx,
        {
          workspace,
          environment: 'live',
          requester: { kind: 'key' as const, keyId: 'key_wave', agentId: null, owner: null },
        },
        {
          connection: 'SDK',
          toolName: 'payments.send',
          arguments: { amount: 1000 + i, currency: 'EUR', payee: 'Globex' },
          agent: { id: 'billing-bot', label: null },
          context: {},
          idempotencyKey: `wave-${i}`,
        },
      );
    }
    await t.clock.advance(60 * MIN);
    await t.clock.advance(Math.max(digestMinutes, 1) * MIN);
    await notificationsDone(t);
    const mails = smtp.messagesTo(ESCALATED_TO);
    return {
      holds,
      mails: mails.length,
      subjects: mails.map((mail) => mail.subject),
      links: mails.flatMap((mail) => mail.links.filter((link) => link.includes('/d/'))).length,
    };
  } finally {
    await t.close();
    await smtp.close();
  }
}
