/**
 * The preview of a draft rule: the last 30 days replayed with it (services/simulate-policy.ts), what
 * would be decided differently, and a button that saves the very draft replayed.
 */
import { describeTypeMismatch } from '../../../domain/rules.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import { followUpsText, type SimulationReport } from '../../../services/simulate-policy.ts';
import type { RuleValues } from '../../forms/rules.ts';
import { type Html, html, time, when } from '../../html.ts';
import { configFields } from '../form-fields.ts';
import { hiddenFields, PREVIEW_DAYS, ruleAction } from './form.ts';
import { effectBadge } from './list.ts';

const EXAMPLES_SHOWN = 10;

const describeDecision = (d: SimulationReport['examples'][number]['actual']) =>
  html`${effectBadge(d.effect)}${d.effect === 'approval' ? html` ×${d.approvals_required}, ${d.timeout_minutes} min` : null}
    <span class="muted">${d.rule ?? '—'}</span>`;

const transitions = (report: SimulationReport) =>
  when(
    report.transitions.length > 0,
    () =>
      html`<table class="responsive">
        <thead>
          <tr>
            <th>Was</th>
            <th>Would be</th>
            <th>Holds</th>
          </tr>
        </thead>
        <tbody>
          ${report.transitions.map(
            (t) =>
              html`<tr>
                <td data-label="Was">${effectBadge(t.from)}</td>
                <td data-label="Would be">
                  ${effectBadge(t.to)}
                  ${when(
                    t.from === 'approval' && t.to === 'approval',
                    () => html`<span class="muted">other approvals or deadline</span>`,
                  )}
                </td>
                <td data-label="Holds">${t.count}</td>
              </tr>`,
          )}
        </tbody>
      </table>`,
  );

const pending = (report: SimulationReport) =>
  when(
    report.pending.length > 0,
    () =>
      html`<h3>Holds that would wait for people</h3>
        <ul>
          ${report.pending.map(
            (p) =>
              html`<li>
                <strong>${p.rule}</strong>: ${p.holds} ${p.holds === 1 ? 'hold' : 'holds'};
                ${followUpsText(p)}
              </li>`,
          )}
        </ul>`,
  );

const example = (e: SimulationReport['examples'][number]) =>
  html`<tr>
    <td><a href="/app/holds/${e.id}">${time(Date.parse(e.created_at))}</a></td>
    <td>${e.connection}/<strong>${e.tool_name}</strong> <span class="muted">by ${e.agent}</span></td>
    <td data-label="Was">${describeDecision(e.actual)}</td>
    <td data-label="Would be">
      ${describeDecision(e.draft)}
      ${e.draft.type_mismatches.map((m) => html`<br /><span class="muted">${describeTypeMismatch(m)}</span>`)}
      ${when(
        !!e.draft.remind || e.draft.escalate.length > 0,
        () => html`<br /><span class="muted">${followUpsText(e.draft)}</span>`,
      )}
    </td>
  </tr>`;

function examples(report: SimulationReport): Html | null {
  const shown = report.examples.slice(0, EXAMPLES_SHOWN);
  return when(
    shown.length > 0,
    () =>
      html`<h3>
          Examples${report.changed > shown.length ? html` (${shown.length} of ${report.changed})` : null}
        </h3>
        <table class="responsive">
          <thead>
            <tr>
              <th>Hold</th>
              <th>Call</th>
              <th>Was</th>
              <th>Would be</th>
            </tr>
          </thead>
          <tbody>
            ${shown.map(example)}
          </tbody>
        </table>`,
  );
}

export function previewReport(
  session: AppSession,
  draft: { original: string; version: number | undefined; values: RuleValues },
  report: SimulationReport,
): Html {
  return html`<section class="card" id="preview" aria-labelledby="preview-title">
    <h2 id="preview-title">Preview: the last ${PREVIEW_DAYS} days with this rule</h2>
    <p>
      Replayed <strong>${report.holds}</strong> holds from ${time(Date.parse(report.period.from))} to
      ${time(Date.parse(report.period.to))} (${report.rules.current} rules now, ${report.rules.draft} in the
      draft).
    </p>
    <p><strong>${report.changed}</strong> would be decided differently, ${report.unchanged} the same.</p>
    ${transitions(report)} ${pending(report)} ${examples(report)}
    <p class="muted">
      Replayed with each tool's classification of today; a change of approvers alone is not counted. Nothing
      is saved yet.
    </p>
    <form method="post" action="${ruleAction(draft.original)}" class="row">
      ${configFields(session, draft.version)} ${hiddenFields(draft.values)}
      <button type="submit" name="action" value="save">Save this rule</button>
      <span class="muted">or change the form below and preview again.</span>
    </form>
  </section>`;
}
