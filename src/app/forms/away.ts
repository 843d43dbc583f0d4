/**
 * Time zone, quiet hours and out of office: the fields a member sets on their own settings page and an
 * admin sets on the Members page, read into the workspace file's `time_zone`, `quiet_hours` and
 * `delegate`. A delegation's time typed in the form is read in the time zone chosen in the same form,
 * so a save that changes both reads it in the new zone; a time left as the form showed it (in
 * `shown_zone`, the zone saved) keeps its moment, so changing only the zone moves nothing.
 */
import { CLOCK_TIME } from '../../domain/quiet-hours.ts';
import { isTimeZone } from '../../domain/time-zones.ts';
import type { WorkspaceConfig } from '../../services/config-file.ts';
import { field, type Form } from '../respond.ts';
import { fromLocalInput, localInput } from '../zoned-time.ts';

export type MemberEntry = NonNullable<WorkspaceConfig['members']>[number];
export type AwayChange = Pick<MemberEntry, 'time_zone' | 'quiet_hours' | 'delegate'>;
/** Keyed like the file's fields, so the file's own check lands on the same fieldset. */
export type AwayErrors = Partial<Record<'time_zone' | 'quiet_hours' | 'delegate', string>>;

export interface AwayValues {
  /** An IANA name; empty: UTC. */
  time_zone: string;
  quiet_from: string;
  quiet_to: string;
  quiet_weekends: boolean;
  /** The delegate's e-mail; empty: nobody. */
  delegate_to: string;
  delegate_from: string;
  delegate_until: string;
  /** The zone the delegation's times were shown in (the zone saved). */
  shown_zone: string;
}

export function awayValuesOf(entry: MemberEntry | undefined): AwayValues {
  const zone = entry?.time_zone ?? 'UTC';
  const local = (iso: string | undefined) => (iso ? localInput(Date.parse(iso), zone) : '');
  return {
    time_zone: entry?.time_zone ?? '',
    quiet_from: entry?.quiet_hours?.from ?? '',
    quiet_to: entry?.quiet_hours?.to ?? '',
    quiet_weekends: entry?.quiet_hours?.weekends ?? false,
    delegate_to: entry?.delegate?.to ?? '',
    delegate_from: local(entry?.delegate?.from),
    delegate_until: local(entry?.delegate?.until),
    shown_zone: zone,
  };
}

/** `20:00` as a time input sends it (`20:00:00` with seconds): its hours and minutes. */
const clock = (text: string) => (/^\d\d:\d\d(:00)?$/.test(text) ? text.slice(0, 5) : text);

/**
 * The posted fields, as the file would take them, and what is wrong with them in words (never quoting
 * what was typed: the form shows that). `now` starts a delegation whose start is left empty.
 */
export function readAwayForm(
  form: Form,
  now: number,
  /** The delegation saved: kept as it is even once it has ended, so other changes can be saved. */
  saved: MemberEntry['delegate'] = null,
): { values: AwayValues; change: AwayChange; errors: AwayErrors } {
  const shown = field(form, 'shown_zone');
  const values: AwayValues = {
    time_zone: field(form, 'time_zone'),
    quiet_from: clock(field(form, 'quiet_from')),
    quiet_to: clock(field(form, 'quiet_to')),
    quiet_weekends: field(form, 'quiet_weekends') !== '',
    delegate_to: field(form, 'delegate_to'),
    delegate_from: field(form, 'delegate_from'),
    delegate_until: field(form, 'delegate_until'),
    shown_zone: shown && isTimeZone(shown) ? shown : 'UTC',
  };
  const errors: AwayErrors = {};
  const change: AwayChange = { time_zone: null, quiet_hours: null, delegate: null };

  if (values.time_zone && !isTimeZone(values.time_zone))
    errors.time_zone = 'Choose a time zone from the list.';
  else change.time_zone = values.time_zone || null;

  const { quiet_from: from, quiet_to: to } = values;
  if (!from && !to) {
    if (values.quiet_weekends) errors.quiet_hours = 'Quiet weekends come with quiet hours: give both times.';
  } else if (!from || !to) errors.quiet_hours = 'Give both times, or neither for no quiet hours.';
  else if (!CLOCK_TIME.test(from) || !CLOCK_TIME.test(to)) errors.quiet_hours = 'Give times like 20:00.';
  else change.quiet_hours = { from, to, weekends: values.quiet_weekends };

  if (values.delegate_to) {
    const zone = change.time_zone ?? 'UTC';
    const read = (typed: string, kept: string | undefined) =>
      kept && typed === localInput(Date.parse(kept), values.shown_zone)
        ? Date.parse(kept)
        : fromLocalInput(typed, zone);
    // "Now" to the second, as the form shows it: saved again unchanged, it stays the same delegation.
    const start = values.delegate_from ? read(values.delegate_from, saved?.from) : now - (now % 1000);
    const end = read(values.delegate_until, saved?.until);
    if (start === null) errors.delegate = 'From is not a date and time: pick one, or leave it empty for now.';
    else if (end === null) errors.delegate = 'Until needs a date and time.';
    else if (end <= start) errors.delegate = 'Until must be later than From.';
    else if (end <= now && end !== (saved && Date.parse(saved.until)))
      errors.delegate = 'Until has passed already: choose a later time.';
    else
      change.delegate = {
        to: values.delegate_to,
        from: new Date(start).toISOString(),
        until: new Date(end).toISOString(),
      };
  }
  return { values, change, errors };
}

const SUBJECTS: Record<string, string> = {
  time_zone: 'The time zone',
  quiet_hours: 'Quiet hours',
  'quiet_hours.from': 'From',
  'quiet_hours.to': 'To',
  delegate: 'The delegation',
  'delegate.to': 'The member chosen',
  'delegate.from': 'From',
  'delegate.until': 'Until',
};

/**
 * The file's check of a member's away fields in words, for its fieldset: `delegate.to` and `is a
 * viewer; …` become `The member chosen is a viewer; …`. Null for any other field.
 */
export function awayIssue(path: string[], message: string): [keyof AwayErrors, string] | null {
  const subject = SUBJECTS[path.join('.')];
  return subject ? [path[0] as keyof AwayErrors, `${subject} ${message}`] : null;
}
