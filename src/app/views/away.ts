/** The time zone, quiet hours and out-of-office fields of a member's form (see `forms/away.ts`). */
import { isTimeZone, timeZoneChoices } from '../../domain/time-zones.ts';
import type { AwayErrors, AwayValues } from '../forms/away.ts';
import { type Html, html } from '../html.ts';
import { checked, describedBy, fieldError, selected } from './form-fields.ts';

/** The choices of the time zone select: the runtime's IANA zones (UTC is the empty choice). */
const ZONES = timeZoneChoices().filter((zone) => zone !== 'UTC');

export interface AwayFieldsOptions {
  /** Prefix of the inputs' ids (one page may hold more than one form). */
  id: string;
  /** Whose settings the labels speak of: yours (your own page) or the member's (the admin page). */
  you: boolean;
  /** Who may be chosen as delegate: the workspace's admins and approvers other than the member. */
  delegates: { email: string; name: string }[] | null;
}

/** Which zone the delegation's date-times are in: as saved when shown, as chosen above when typed. */
const zoneNote = (zoneWords: string) =>
  html`<p class="muted">
    Dates and times in ${zoneWords}. A date and time you type or change is read in the time zone chosen above.
  </p>`;

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
              ${zoneNote(zoneWords)}
            </fieldset>
            ${fieldError(id('away'), errors.delegate)}`
    }`;
}
