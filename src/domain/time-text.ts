/**
 * Times as plain text, for places that cannot know the reader's zone (e-mails, the status page, the
 * app's text before its script localizes it): always in UTC and saying so.
 */

/** `2026-11-23 22:30 UTC` */
export const utcText = (ms: number) => `${new Date(ms).toISOString().replace('T', ' ').slice(0, 16)} UTC`;

const UNITS: [number, string][] = [
  [86_400_000, 'd'],
  [3_600_000, 'h'],
  [60_000, 'min'],
];

/** `in 12 min`, `5 min ago`, `in 3 h`, `2 d ago`; under a minute `now`. Same words as src/app/static/time.js. */
export function relativeText(ms: number, now: number): string {
  const delta = ms - now;
  const [unit, name] = UNITS.find(([size]) => Math.abs(delta) >= size) ?? [0, ''];
  if (unit === 0) return 'now';
  const count = Math.floor(Math.abs(delta) / unit);
  return delta > 0 ? `in ${count} ${name}` : `${count} ${name} ago`;
}

/** A look-back as `approvals simulate --since` takes it: `30d`, `12h`, `90m` → milliseconds; else undefined. */
export function lookBackMs(text: string): number | undefined {
  const match = /^(\d{1,6})([mhd])$/.exec(text);
  if (!match) return undefined;
  return Number(match[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'm' | 'h' | 'd'];
}
