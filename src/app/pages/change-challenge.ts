/**
 * A passkey-signed approval with changes: the page's script asks for the challenge of the call as its
 * boxes would change it (static/passkey.js), then the member's passkey signs that. The decision checks
 * the changes and the signature again; this only says what to sign, or why the changes are refused.
 */
import type { FastifyReply } from 'fastify';
import type { Hold } from '../../domain/hold.ts';
import { checkShown, editableOf } from '../../services/decision-changes.ts';
import { ServiceError } from '../../services/errors.ts';
import { changedApprovalChallenge } from '../../services/passkeys.ts';
import type { ServiceContext } from '../../services/context.ts';
import { formChanges } from '../forms/changes.ts';
import { field, type Form } from '../respond.ts';

export async function sendChangeChallenge(ctx: ServiceContext, reply: FastifyReply, hold: Hold, body: Form) {
  const refuse = (message: string) => reply.code(422).send({ error: 'not_decided', message });
  const read = formChanges(body, hold, await editableOf(ctx.db, hold));
  if ('problem' in read) return refuse(read.problem);
  try {
    // A page from before another approver's change asks for a challenge the decision would refuse.
    checkShown(hold, { verdict: 'approve', shown: field(body, 'shown') || undefined });
    const challenge = await changedApprovalChallenge(ctx.db, hold, read.changes);
    return reply.header('Cache-Control', 'no-store').send({ challenge });
  } catch (error) {
    if (error instanceof ServiceError) return refuse(error.message);
    throw error;
  }
}
