/** How both formats write what reminders, escalation steps and delegates did for a hold. */
import { durationText } from '../domain/follow-ups.ts';
import type { ActivityRow } from '../services/reports.ts';

/** `group:oncall, bob@acme.test after 15 min`: the approver entries a step added, and when. */
export const stepText = ({ added, afterMinutes }: ActivityRow['escalations'][number]) =>
  `${added.join(', ') || 'nobody new'} after ${durationText(afterMinutes * 60_000)}`;

/** Who decided, in order: `Dan for Ann` where a delegate decided in a member's place. */
export const decidersOf = ({ approvers, onBehalfOf }: ActivityRow) =>
  approvers.map((name, index) => (onBehalfOf[index] ? `${name} for ${onBehalfOf[index]}` : name));
