/** The rules in force, each in words: what it matches, its conditions, what happens. */
import { type Classification, DEFAULT_TIMEOUT_MINUTES } from '../../../domain/policy.ts';
import type { RuleDefinition } from '../../../domain/rules.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import { type Html, html, when } from '../../html.ts';
import { configFields } from '../form-fields.ts';
import { VERB } from '../conditions.ts';

export const ruleUrl = (name: string) => `/app/admin/rules/${encodeURIComponent(name)}`;

export const effectBadge = (effect: Classification | string) =>
  html`<span class="status ${{ allow: 'approved', approval: 'pending', deny: 'rejected' }[effect] ?? ''}"
    >${effect === 'approval' ? 'approval' : effect}</span
  >`;

const none = html`<span class="muted">—</span>`;

/** A value in words: text in quotes as it is (a pattern unescaped), numbers bare, anything else as JSON. */
const valueText = (value: unknown): Html =>
  typeof value === 'string'
    ? html`“<code>${value}</code>”`
    : Array.isArray(value)
      ? html`${value.map((item, i) => html`${i > 0 ? ', ' : null}${valueText(item)}`)}`
      : html`<code>${JSON.stringify(value)}</code>`;

/** `amount is more than 1000`, `command matches the pattern “rm -rf”`, `ticket is present`. */
function conditionText(rule: RuleDefinition): Html {
  if (!rule.when?.length) return none;
  return html`${rule.when.map(
    (c, i) =>
      html`${i > 0 ? html`<br />` : null}<code>${c.arg}</code> ${
          c.op === 'exists'
            ? c.value === false
              ? 'is absent'
              : 'is present'
            : html`${VERB[c.op]} ${valueText(c.value)}`
        }`,
  )}`;
}

/** An approval rule's follow-ups and ways of approving, in a few words: what the form's last parts say. */
function followUpText(rule: RuleDefinition): string {
  const { remind, escalate, claim } = rule;
  return [
    remind?.before?.length ? `reminds ${remind.before.join(', ')} before` : '',
    remind?.every ? `reminds every ${remind.every}` : '',
    escalate?.length ? `escalates after ${escalate.map((step) => step.after).join(', ')}` : '',
    rule.signed ? 'signed' : '',
    rule.bulk === undefined ? '' : rule.bulk ? 'in bulk' : 'not in bulk',
    claim?.minutes ? `claims last ${claim.minutes} min` : '',
    claim?.halts_escalation ? 'a claim halts escalation' : '',
  ]
    .filter((part) => part !== '')
    .join('; ');
}

function ruleRow(session: AppSession, version: number, rule: RuleDefinition): Html {
  const approval = rule.effect === 'approval';
  return html`<tr>
    <td><strong>${rule.name}</strong></td>
    <td data-label="Matches">
      <code>${rule.tool}</code>
      <span class="muted"
        >on
        ${rule.connection ?? 'any connection'}${rule.agent ? html`, agent <code>${rule.agent}</code>` : null}</span
      >
    </td>
    <td data-label="Conditions">${conditionText(rule)}</td>
    <td data-label="Frequency">
      ${
        rule.frequency
          ? html`more than ${rule.frequency.more_than} per ${rule.frequency.per}
              <span class="muted">by ${rule.frequency.by.replaceAll('_', ' ')}</span>`
          : none
      }
    </td>
    <td data-label="Effect">
      ${effectBadge(rule.effect)}
      ${when(rule.effect === 'deny' && rule.reason, () => html`<br /><span class="muted">${rule.reason}</span>`)}
    </td>
    <td data-label="Approvers">
      ${approval ? (rule.approvers?.length ? rule.approvers.join(', ') : 'role:admin') : none}
    </td>
    <td data-label="Approvals">${approval ? (rule.approvals_required ?? 1) : none}</td>
    <td data-label="Deadline">
      ${approval ? `${rule.timeout_minutes ?? DEFAULT_TIMEOUT_MINUTES} min` : none}
      ${when(approval && followUpText(rule), () => html`<br /><span class="muted">${followUpText(rule)}</span>`)}
    </td>
    <td>
      <div class="row">
        <a href="${ruleUrl(rule.name)}">Edit<span class="visually-hidden"> ${rule.name}</span></a>
        <form method="post" action="${ruleUrl(rule.name)}/delete">
          ${configFields(session, version)}
          <button type="submit" class="link">
            Delete<span class="visually-hidden"> ${rule.name}</span>…
          </button>
        </form>
      </div>
    </td>
  </tr>`;
}

export function ruleTable(session: AppSession, version: number, rules: RuleDefinition[]): Html {
  if (rules.length === 0)
    return html`<p class="empty card">
      No rules yet: every call follows its tool's classification.
      <a href="/app/admin/rules?new">Write the first rule</a>.
    </p>`;
  return html`<table class="responsive" id="rule-list">
    <thead>
      <tr>
        <th>Name</th>
        <th>Matches</th>
        <th>Conditions</th>
        <th>Frequency</th>
        <th>Effect</th>
        <th>Approvers</th>
        <th>Approvals</th>
        <th>Deadline</th>
        <th><span class="muted">Actions</span></th>
      </tr>
    </thead>
    <tbody>
      ${rules.map((rule) => ruleRow(session, version, rule))}
    </tbody>
  </table>`;
}
