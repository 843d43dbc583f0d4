/**
 * Quiet hours: a member's time of day (in their time zone) when non-urgent notifications wait, and
 * optionally their whole weekend. Pure: time zones come from the JavaScript runtime's Intl data.
 */
import { instantOf, wallClock } from './time-zones.ts';

export interface QuietHours {
  /** `HH:MM`, local time; the quiet period starts here. */
  from: string;
  /** `HH:MM`, local time; it ends here (the next day when earlier than `from`). */
  to: string;
  /** Saturday and Sunday are quiet all day. */
  weekends: boolean;
}

export const CLOCK_TIME = /^([01]\d|2[0-3]):([0-5]\d)$/;

const minutesOf = (clock: string) => Number(clock.slice(0, 2)) * 60 + Number(clock.slice(3, 5));
const DAY = 86_400_000;

/**
 * When the quiet period that contains `now` ends (an instant), or null when `now` is not quiet.
 * Worked in local wall-clock time, then turned back into an instant.
 */
export function quietUntil(quiet: QuietHours | null, timeZone: string | null, now: number): number | null {
  if (!quiet) return null;
  const zone = timeZone ?? 'UTC';
  let local = wallClock(zone, now) + (now % 1000);
  const start = minutesOf(quiet.from);
  const end = minutesOf(quiet.to);
  const inWindow = (minute: number) =>
    start < end ? minute >= start && minute < end : minute >= start || minute < end;
  const weekend = (at: number) => [0, 6].includes(new Date(at).getUTCDay());
  let moved = false;
  // Each pass leaves a weekend day or a window: a Friday night runs on to Saturday, Sunday, Monday morning.
  for (let pass = 0; pass < 8; pass++) {
    const minute = Math.floor((local % DAY) / 60_000);
    if (quiet.weekends && weekend(local)) {
      local = local - (local % DAY) + DAY;
    } else if (inWindow(minute)) {
      local = local - (local % 60_000) + (((end - minute + 1440) % 1440) * 60_000 || 0);
    } else break;
    moved = true;
  }
  if (!moved) return null;
  // Local time back to an instant: a clock change in between counts. Inside an hour the clock repeats,
  // an end the clock showed already (in its first pass) has come.
  const ends = instantOf(zone, local);
  return ends > now ? ends : null;
}
