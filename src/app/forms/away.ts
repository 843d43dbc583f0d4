/**
 * Time zone, quiet hours and out of office: the fields a member sets on their own settings page and an
 * admin sets on the Members page, read into the workspace file's `time_zone`, `quiet_hours` and
 * `delegate`. A delegation's times are typed in the zone the form was drawn in (`shown_zone`, said
 * beside them), so changing the time zone in the same form does not move them.
 */
import { CLOCK_TIME } from '../../domain/quiet-hours.ts';
import { isTimeZone, timeZoneChoices } from '../../domain/time-zones.ts';
import type { WorkspaceConfig } from '../../services/config-file.ts';
import { type Html, html } from '../html.ts';
import { field, type Form } from '../respond.ts';
import { fromLocalInput, localInput } from '../zoned-time.ts';
import { checked, describedBy, fieldError, selected } from './admin/shared.ts';

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
  /** The zone the delegation's times are shown and typed in. */
  shown_zone: string;
}

/** The choices of the time zone select: the runtime's IANA zones (UTC is the empty choice). */
const ZONES = timeZoneChoices().filter((zone) => zone !== 'UTC');

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
    // "Now" to the second, as the form shows it: saved again unchanged, it stays the same delegation.
    const start = values.delegate_from
      ? fromLocalInput(values.delegate_from, values.shown_zone)
      : now - (now % 1000);
    const end = fromLocalInput(values.delegate_until, values.shown_zone);
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

export interface AwayFieldsOptions {
  /** Prefix of the inputs' ids (one page may hold more than one form). */
  id: string;
  /** Whose settings the labels speak of: yours (your own page) or the member's (the admin page). */
  you: boolean;
  /** Who may be chosen as delegate: the workspace's admins and approvers other than the member. */
  delegates: { email: string; name: string }[] | null;
}

export function awayFields(values: AwayValues, errors: AwayErrors, options: AwayFieldsOptions): Html {
  const id = (name: string) => `${options.id}-${name}`;
  // A zone saved under another name (an alias like Asia/Calcutta) stays choosable; anything else is no zone.
  const kept = values.time_zone && isTimeZone(values.time_zone) && !ZONES.includes(values.time_zone);
  const zones = kept ? [values.time_zone, ...ZONES] : ZONES;
  const zoneWords = `${values.shown_zone}, ${options.you ? 'your' : 'their'} time zone as saved`;
  const delegates = options.delegates;
  return html`<input type="hidden" name="shown_zone" value="${values.shown_zone}" />
    <label for="${id('zone')}">Time zone</label>
    <select id="${id('zone')}" name="time_zone" ${describedBy(id('zone'), errors.time_zone)}>
      <option value="">UTC</option>
      ${zones.map((zone) => html`<option ${selected(zone === values.time_zone)}>${zone}</option>`)}
    </select>
    ${fieldError(id('zone'), errors.time_zone)}
    <fieldset class="plain away" ${describedBy(id('quiet'), errors.quiet_hours)}>
      <legend><strong>Quiet hours</strong></legend>
      <p class="muted">
        Requests and reminders wait until quiet hours end, in the time zone above — unless the hold's deadline
        comes first. Leave both times empty for none.
      </p>
      <div class="pair">
        <div>
          <label for="${id('quiet-from')}">From</label>
          <input id="${id('quiet-from')}" name="quiet_from" type="time" value="${values.quiet_from}" />
        </div>
        <div>
          <label for="${id('quiet-to')}">To</label>
          <input id="${id('quiet-to')}" name="quiet_to" type="time" value="${values.quiet_to}" />
        </div>
      </div>
      <label class="choice"
        ><input type="checkbox" name="quiet_weekends" value="yes" ${checked(values.quiet_weekends)} /> All of
        Saturday and Sunday too</label
      >
    </fieldset>
    ${fieldError(id('quiet'), errors.quiet_hours)}
    ${
      delegates === null
        ? null
        : html`<fieldset class="plain away" ${describedBy(id('away'), errors.delegate)}>
              <legend><strong>Out of office</strong></legend>
              <p class="muted">
                ${
                  options.you
                    ? 'While you are away, the member you choose decides in your place: holds that wait for you show in their inbox, marked with your name.'
                    : 'While the member is away, the member chosen here decides in their place: holds that wait for them show in the chosen member’s inbox, marked with their name.'
                }
                Choose nobody to end it.
              </p>
              <label for="${id('delegate')}">Who decides ${options.you ? 'for you' : 'for them'}</label>
              <select id="${id('delegate')}" name="delegate_to">
                <option value="">Nobody (not away)</option>
                ${delegates.map((d) => html`<option value="${d.email}" ${selected(d.email === values.delegate_to)}>${d.name} (${d.email})</option>`)}
              </select>
              <div class="pair">
                <div>
                  <label for="${id('from')}">From <span class="muted">(empty: now)</span></label>
                  <input
                    id="${id('from')}"
                    name="delegate_from"
                    type="datetime-local"
                    value="${values.delegate_from}"
                    ${values.delegate_from.length > 16 ? html`step="1"` : null}
                  />
                </div>
                <div>
                  <label for="${id('until')}">Until</label>
                  <input
                    id="${id('until')}"
                    name="delegate_until"
                    type="datetime-local"
                    value="${values.delegate_until}"
                    ${values.delegate_until.length > 16 ? html`step="1"` : null}
                  />
                </div>
              </div>
              <p class="muted">Dates and times in ${zoneWords}.</p>
            </fieldset>
            ${fieldError(id('away'), errors.delegate)}`
    }`;
}
