/** The rules area's two pages: the list (tools to classify, rules in force, tools) and the rule form. */
import type { WorkspaceConfig } from '../../../services/config-file.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import type { SimulationReport } from '../../../services/simulate-policy.ts';
import type { Tool } from '../../../store/tools.ts';
import type { FieldErrors } from '../../forms/form.ts';
import type { RuleValues } from '../../forms/rules.ts';
import { type Html, html, when } from '../../html.ts';
import { issueSummary } from '../form-fields.ts';
import { problemLinks, type RuleChoices } from './fields.ts';
import { ruleForm } from './form.ts';
import { ruleTable } from './list.ts';
import { previewReport } from './preview.ts';
import { allTools, toClassify } from './tools.ts';

const NOTICES: Record<string, string> = {
  saved: 'Rule saved. It decides every hold submitted from now on.',
  deleted: 'Rule deleted.',
  classified: 'Tool classified. Its next calls follow the new classification.',
};

/** A notice's text; a tool allowed with its waiting calls says what became of them. */
export function noticeText(notice: { key: string; counts?: number[] } | null): string | null {
  const text = notice ? NOTICES[notice.key] : undefined;
  if (text === undefined) return null;
  const [approved = 0, others = 0, left = 0] = notice?.counts ?? [];
  if (approved + others + left === 0) return text;
  const parts = [
    `${approved} waiting ${approved === 1 ? 'hold' : 'holds'} approved`,
    ...(others ? [`${others} now wait for their other approvers`] : []),
    ...(left ? [`${left} left as they were (not yours to decide, or decided meanwhile)`] : []),
  ];
  return `${text} ${parts.join('; ')}.`;
}

/** What the rule form offers: the connections known, the tools seen, the approvers there are. */
export function ruleChoices(tools: Tool[], config: WorkspaceConfig): RuleChoices {
  const connections = new Set<string>(['SDK']);
  for (const tool of tools) connections.add(tool.connection);
  for (const rule of config.rules ?? []) if (rule.connection) connections.add(rule.connection);
  const approvers = [
    { value: 'role:admin', label: 'role:admin — every admin' },
    { value: 'role:approver', label: 'role:approver — every approver' },
    ...Object.entries(config.groups ?? {}).map(([name, emails]) => ({
      value: `group:${name}`,
      label: `group:${name} — ${emails.length} member${emails.length === 1 ? '' : 's'}`,
    })),
    ...(config.members ?? [])
      .filter((m) => m.role !== 'viewer')
      .map((m) => ({ value: m.email, label: `${m.name} <${m.email}>` })),
  ];
  return {
    connections: [...connections].sort(),
    toolNames: [...new Set(tools.map((tool) => tool.name))].sort(),
    approvers,
  };
}

export function rulesOverview(
  session: AppSession,
  config: WorkspaceConfig & { version: number },
  tools: Tool[],
  problems: string[],
): Html {
  return html`<div class="heading">
      <h1>Rules</h1>
      <a class="button" href="/app/admin/rules?new">New rule</a>
    </div>
    ${issueSummary(problems)} ${toClassify(session, config.version, tools)}
    <h2 id="rules">Rules in force <span class="badge">${config.rules?.length ?? 0}</span></h2>
    <p class="muted">
      Every rule that matches a call is considered: deny beats approval beats allow; among approval rules the
      one with the most approvals required, then the shortest deadline. The order of the rules does not
      matter. See <a href="/docs/rules">the rule language</a>.
    </p>
    ${ruleTable(session, config.version, config.rules ?? [])} ${allTools(session, config.version, tools)}`;
}

/** The rule being written: its original name ('' for a new one) and the form as typed. */
export interface RuleFormState {
  original: string;
  version: number | undefined;
  values: RuleValues;
  errors: FieldErrors;
  problems: string[];
  report?: SimulationReport;
}

/** The form of a rule not yet posted: no problems. */
export const freshForm = (
  original: string,
  version: number | undefined,
  values: RuleValues,
): RuleFormState => ({
  original,
  version,
  values,
  errors: {},
  problems: [],
});

export const ruleFormTitle = (original: string) => (original ? `Edit rule “${original}”` : 'New rule');

export function ruleFormPage(session: AppSession, state: RuleFormState, choices: RuleChoices): Html {
  const summary = [...problemLinks(state.values, state.errors), ...state.problems];
  return html`<p><a href="/app/admin/rules">← Rules</a></p>
    <h1>${ruleFormTitle(state.original)}</h1>
    ${issueSummary(summary)} ${when(state.report, () => previewReport(session, state, state.report!))}
    ${ruleForm(session, state, choices)}`;
}
