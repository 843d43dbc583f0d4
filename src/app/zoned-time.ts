/**
 * Date-times as a person reads and types them in a form (`<input type="datetime-local">`: a wall-clock
 * time without a zone) in a named IANA zone, and the instants they stand for.
 */
const formats = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock time in `zone` at the instant `at`, as if it were UTC (epoch ms). */
function wallClock(zone: string, at: number): number {
  let format = formats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(zone, format);
  }
  const part = Object.fromEntries(format.formatToParts(at).map((p) => [p.type, Number(p.value)]));
  return Date.UTC(part.year!, part.month! - 1, part.day!, part.hour!, part.minute!, part.second!);
}

/** `2026-12-01T10:00` (with seconds only when there are some), the local time in `zone` at `at`. */
export function localInput(at: number, zone: string): string {
  const text = new Date(wallClock(zone, at)).toISOString();
  return text.slice(0, text.endsWith(':00.000Z') ? 16 : 19);
}

const LOCAL = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/;

/**
 * The instant a local time in `zone` names; null when it is no date-time. A time a clock change skips
 * or repeats gets one of the zone's offsets around the change.
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
  const guess = wall - (wallClock(zone, wall) - wall);
  return wall - (wallClock(zone, guess) - guess);
}
