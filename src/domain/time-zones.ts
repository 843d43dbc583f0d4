/**
 * IANA time zones, from the JavaScript runtime's Intl data: names, the wall-clock time in a zone at an
 * instant, and the instant a wall-clock time names.
 */

export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/**
 * Zones ICU still lists under names IANA has replaced (ICU keeps its first ids), by their current
 * names: a person in Kyiv or Kolkata looks for those. Both names work everywhere; only the list shows one.
 */
const CURRENT_NAMES: Record<string, string> = {
  'America/Buenos_Aires': 'America/Argentina/Buenos_Aires',
  'America/Catamarca': 'America/Argentina/Catamarca',
  'America/Cordoba': 'America/Argentina/Cordoba',
  'America/Godthab': 'America/Nuuk',
  'America/Indianapolis': 'America/Indiana/Indianapolis',
  'America/Jujuy': 'America/Argentina/Jujuy',
  'America/Louisville': 'America/Kentucky/Louisville',
  'America/Mendoza': 'America/Argentina/Mendoza',
  'Asia/Calcutta': 'Asia/Kolkata',
  'Asia/Katmandu': 'Asia/Kathmandu',
  'Asia/Rangoon': 'Asia/Yangon',
  'Asia/Saigon': 'Asia/Ho_Chi_Minh',
  'Atlantic/Faeroe': 'Atlantic/Faroe',
  'Europe/Kiev': 'Europe/Kyiv',
  'Pacific/Enderbury': 'Pacific/Kanton',
};

/** The IANA time zones to choose from, by their current names, sorted. */
export const timeZoneChoices = (): string[] =>
  Intl.supportedValuesOf('timeZone')
    .map((zone) => CURRENT_NAMES[zone] ?? zone)
    .sort();

const formats = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock time in `zone` at the instant `at` (to the second), written as if it were UTC (epoch ms). */
export function wallClock(zone: string, at: number): number {
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

const DAY = 86_400_000;

/** The zone's offset from UTC at the instant `at`, in milliseconds. */
const offsetAt = (zone: string, at: number) => wallClock(zone, at) - (at - (at % 1000));

/**
 * The first instant at which the clock in `zone` shows the wall-clock time `wall` (written as if it
 * were UTC, to the second) or a later one: of a time a clock change repeats, the earlier; of one it
 * skips, the moment of the change.
 */
export function instantOf(zone: string, wall: number): number {
  // With the offsets a day before and a day after: one of them is right unless the time is skipped.
  const [early, late] = [wall - offsetAt(zone, wall - DAY), wall - offsetAt(zone, wall + DAY)].sort(
    (a, b) => a - b,
  ) as [number, number];
  for (const at of [early, late]) if (wallClock(zone, at) === wall) return at;
  // Skipped: the clock shows a time before `wall` at `early` and after it at `late`; find the change,
  // which falls on a whole minute.
  let [before, after] = [early, late];
  while (after - before > 60_000) {
    const middle = before + Math.floor((after - before) / 120_000) * 60_000;
    if (wallClock(zone, middle) >= wall) after = middle;
    else before = middle;
  }
  return after;
}
