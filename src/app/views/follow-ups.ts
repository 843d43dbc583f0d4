/**
 * A hold's follow-ups as a timeline: who an escalation step added and asked, and when; who was
 * reminded, and with how long left; whom it was handed to while its approver is away. `Escalated to
 * oncall (step 1, after 15 min) at 10:15 UTC — asked Olga, Oscar`.
 */
import { approversInWords } from '../../domain/four-eyes.ts';
import type { FollowUpLogEntry } from '../../services/follow-up-log.ts';
import { type Html, html, time } from '../html.ts';

/** `15 min`, `2 h`, `1 h 30 min`. */
export function minutesInWords(minutes: number): string {
  const whole = Math.round(minutes);
  const hours = Math.floor(whole / 60);
  const rest = whole % 60;
  if (hours === 0) return `${rest} min`;
  return rest === 0 ? `${hours} h` : `${hours} h ${rest} min`;
}

const names = (list: string[]) => list.join(', ');
/** `oncall and an admin`: each approver entry the step added. */
const added = (list: string[]) => list.map((approver) => approversInWords([approver])).join(' and ');

function entryView(entry: FollowUpLogEntry): Html {
  if (entry.kind === 'reminder')
    return html`<li>
      Reminded ${names(entry.reminded)} at ${time(entry.at)} (${minutesInWords(entry.secondsLeft / 60)} left)
    </li>`;
  if (entry.kind === 'handover')
    return html`<li>
      Handed to ${entry.delegate} at ${time(entry.at)}: ${entry.member} is away until ${time(entry.until)}
    </li>`;
  const step = `step ${entry.step}, after ${minutesInWords(entry.afterMinutes)}`;
  return html`<li>
    ${entry.added.length > 0 ? `Escalated to ${added(entry.added)} (${step})` : `Escalated (${step})`} at
    ${time(entry.at)} — ${entry.asked.length > 0 ? `asked ${names(entry.asked)}` : 'nobody new to ask'}
  </li>`;
}

export function followUpsView(holdId: string, entries: readonly FollowUpLogEntry[]): Html | null {
  if (entries.length === 0) return null;
  return html`<section class="follow-ups" aria-labelledby="follow-ups-${holdId}">
    <h3 id="follow-ups-${holdId}">Reminders and escalations</h3>
    <ol>
      ${entries.map(entryView)}
    </ol>
  </section>`;
}
