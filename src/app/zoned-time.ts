/**
 * Date-times as a person reads and types them in a form (`<input type="datetime-local">`: a wall-clock
 * time without a zone) in a named IANA zone, and the instants they stand for.
 */
import { instantOf, wallClock } from '../domain/time-zones.ts';
/** `2026-12-01T10:00` (with seconds only when there are some), the local time in `zone` at `at`. */
export function localInput(at: number, zone: string): string {
  const text = new Date(wallClock(zone, at)).toISOString();
  return text.slice(0, text.endsWith(':00.000Z') ? 16 : 19);
}

const LOCAL = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/;

/**
 * The instant a local time in `zone` names; null when it is no date-time. A time a clock change
 * repeats names its first occurrence; one it skips, the moment of the change.
 */
export function fromLocalInput(text: string, zone: string): number | null {
  const match = LOCAL.exec(text);
  if (!match) return null;
  const [year, month, day, hour, minute, second] = match.slice(1).map((part) => Number(part ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const wall = Date.UTC(year, month - 1, day, hour, minute, second);
  // Date.UTC rolls 31 November over into December: such a date is no date.
  if (new Date(wall).getUTCDate() !== day || hour > 23 || minute > 59 || second > 59) return null;
  return instantOf(zone, wall);
}
