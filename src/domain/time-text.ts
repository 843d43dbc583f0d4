/**
 * Times as plain text, for places that cannot know the reader's zone (e-mails, the status page, the
 * app's text before its script localizes it): always in UTC and saying so.
 */
import { durationText } from './follow-ups.ts';

/** `2026-11-23 22:30 UTC` */
export const utcText = (ms: number) => `${new Date(ms).toISOString().replace('T', ' ').slice(0, 16)} UTC`;

/**
 * `in 12 min`, `5 min ago`, `in 1 h 59 min`, `2 d 3 h ago`; under a minute `now`. In the units of
 * `durationText` (minutes under an hour, hours and minutes under two days, then days and hours), cut
 * down to the whole minute: a deadline never reads later than it is. Same words as src/app/static/time.js.
 */
export function relativeText(ms: number, now: number): string {
  const minutes = Math.floor(Math.abs(ms - now) / 60_000);
  if (minutes === 0) return 'now';
  const span = durationText(minutes * 60_000);
  return ms > now ? `in ${span}` : `${span} ago`;
}

/** A look-back as `approvals simulate --since` takes it: `30d`, `12h`, `90m` → milliseconds; else undefined. */
export function lookBackMs(text: string): number | undefined {
  const match = /^(\d{1,6})([mhd])$/.exec(text);
  if (!match) return undefined;
  return Number(match[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'm' | 'h' | 'd'];
}
