/**
 * The rules area: tools to classify, the rule list, and a rule builder that covers the whole rule
 * language (docs/rules.md), with a preview that replays the last 30 days against the draft before
 * saving. Saving replaces the rule set through `applyConfig`, like `approvals apply`. Routes:
 * `/app/admin/rules` (list; `?new` the form of a new rule), `/app/admin/rules/<name>` (edit), its
 * `/delete`, and `/app/admin/tools` (a tool's classification; the tool is named in the form).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { currentConfigVersion } from '../../../services/apply-config.ts';
import { toolsOf } from '../../../services/classify-tool.ts';
import { crossCheck } from '../../../services/config-cross-check.ts';
import type { WorkspaceConfig } from '../../../services/config-file.ts';
import type { ServiceContext } from '../../../services/context.ts';
import { type FieldIssue, ServiceError } from '../../../services/errors.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import { simulatePolicy } from '../../../services/simulate-policy.ts';
import { redirectWithNotice, takeNotice } from '../../flash.ts';
import { attachRuleIssues } from '../../forms/rule-issues.ts';
import { blankRule, draftRule, readRuleForm, valuesOfRule } from '../../forms/rules.ts';
import { html } from '../../html.ts';
import { field, type Form, type PageDeps, problemPage, sendPage } from '../../respond.ts';
import { PREVIEW_DAYS } from '../../views/rules/form.ts';
import { ruleUrl } from '../../views/rules/list.ts';
import {
  freshForm,
  noticeText,
  ruleChoices,
  type RuleFormState,
  ruleFormPage,
  ruleFormTitle,
  rulesOverview,
} from '../../views/rules/pages.ts';
import {
  ADMIN,
  adminPage,
  applyChange,
  checkConfig,
  currentConfig,
  describeIssue,
  readAtOf,
  versionPassedOn,
} from './shared.ts';
import { confirmCard } from '../../views/form-fields.ts';
import { classifyTool } from './tools.ts';

const LIST = '/app/admin/rules';
const NO_RULE = 'No rule of that name in this workspace.';

type Query = Record<string, string | undefined>;
type Route<Params = unknown> = { Body: Form; Params: Params; Querystring: Query };
type Request<Params = unknown> = FastifyRequest<Route<Params>>;
/** A draft that passed the checks, and where the problems found later go. */
type Checked = { config: WorkspaceConfig; take: (issues: FieldIssue[]) => void };

async function overview(ctx: ServiceContext, session: AppSession, notice: string | null, problems: string[]) {
  const config = await currentConfig(ctx, session);
  const body = rulesOverview(session, config, await toolsOf(ctx, session.workspace.id), problems);
  return adminPage(ctx, session, { title: 'Rules', active: 'rules', notice }, body);
}

/** The rule form; refused (422 unless told) when it holds problems. */
async function formPage(ctx: ServiceContext, reply: FastifyReply, state: RuleFormState, status?: number) {
  const session = reply.request.appSession!;
  const choices = ruleChoices(await toolsOf(ctx, session.workspace.id), await currentConfig(ctx, session));
  const body = ruleFormPage(session, state, choices);
  const page = await adminPage(ctx, session, { title: ruleFormTitle(state.original), active: 'rules' }, body);
  const refused = Object.keys(state.errors).length > 0 || state.problems.length > 0;
  return sendPage(reply, page, status ?? (refused ? 422 : 200));
}

/** The list; with `?new`, the form of a new rule (for the tool the list offered it for, if any). */
async function listOrNew(ctx: ServiceContext, request: Request, reply: FastifyReply) {
  const session = request.appSession!;
  const { query } = request;
  if (query.new === undefined)
    return sendPage(reply, await overview(ctx, session, noticeText(takeNotice(request, reply)), []));
  const prefill = {
    tool: (query.tool ?? '').slice(0, 200),
    connection: (query.connection ?? '').slice(0, 200),
  };
  const version = await currentConfigVersion(ctx, session.workspace);
  return formPage(ctx, reply, freshForm('', version, { ...blankRule, ...prefill }));
}

async function editForm(ctx: ServiceContext, request: Request<{ name: string }>, reply: FastifyReply) {
  const { name } = request.params;
  const config = await currentConfig(ctx, request.appSession!);
  const rule = config.rules?.find((r) => r.name === name);
  if (rule) return formPage(ctx, reply, freshForm(name, config.version, valuesOfRule(rule)));
  // The builder's addresses from before its routes named the rule, kept for bookmarks.
  const { rule: edited, ...prefill } = request.query;
  const moved =
    name === 'new'
      ? `${LIST}?${new URLSearchParams({ new: '', ...prefill }).toString()}`
      : name === 'edit' && edited
        ? ruleUrl(edited)
        : null;
  if (moved) return reply.header('Cache-Control', 'no-store').redirect(moved, 301);
  return problemPage(reply, 404, 'Not found', NO_RULE, request.appSession);
}

/**
 * Checks a draft as `approvals apply` does, and against the workspace too (approvers who are members,
 * unique names), so that every problem of the form is shown at once, not one round after another.
 * Returns the draft as checked, or null when it is refused.
 */
function checkDraft(draft: WorkspaceConfig, current: WorkspaceConfig, take: Checked['take']) {
  const checked = checkConfig(draft);
  if ('issues' in checked) take(checked.issues);
  const stored = {
    members: current.members ?? [],
    groups: new Map(Object.entries(current.groups ?? {})),
    rules: current.rules ?? [],
  };
  take(crossCheck('config' in checked ? checked.config : draft, stored, () => undefined));
  return 'config' in checked ? checked.config : null;
}

/** Replays the last days with the checked draft: the form again, with the report above it. */
async function preview(ctx: ServiceContext, reply: FastifyReply, state: RuleFormState, draft: Checked) {
  try {
    const config = { config: draft.config, lineOf: () => undefined };
    const since = { sinceMs: PREVIEW_DAYS * 86_400_000 };
    state.report = await simulatePolicy(ctx, reply.request.appSession!.workspace, config, since);
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    draft.take(error.issues.length > 0 ? error.issues : [{ field: '(change)', message: error.message }]);
  }
  return formPage(ctx, reply, state);
}

/** Saves (or previews) the posted rule: a new one (`original` '') or the one of that name. */
async function saveRule(ctx: ServiceContext, request: Request, reply: FastifyReply, original: string) {
  const session = request.appSession!;
  const values = readRuleForm(request.body);
  const { rule, errors, rowOf } = draftRule(values);
  const state: RuleFormState = { ...freshForm(original, readAtOf(request.body), values), errors };
  const current = await currentConfig(ctx, session);
  const rules = [...(current.rules ?? [])];
  let index = original ? rules.findIndex((r) => r.name === original) : rules.length;
  if (index < 0) {
    const problem = `The rule “${original}” was deleted or renamed meanwhile. Saving now adds this rule as a new one.`;
    return formPage(ctx, reply, { ...freshForm('', state.version, values), problems: [problem] }, 409);
  }
  rules[index] = rule;
  const draft: WorkspaceConfig = { rules };
  const take = (issues: FieldIssue[]) =>
    state.problems.push(
      ...attachRuleIssues(issues, index, rowOf, errors).map((i) => describeIssue(i, draft)),
    );
  const config = checkDraft(draft, current, take);
  if (!config || Object.keys(errors).length > 0 || state.problems.length > 0)
    return formPage(ctx, reply, state);
  if (field(request.body, 'action') === 'preview') return preview(ctx, reply, state, { config, take });

  // The same change to the rules as they are now: this one added or replaced, the rest kept.
  const issues = await applyChange(ctx, session, state.version, (now) => {
    const stored = [...(now.rules ?? [])];
    const found = stored.findIndex((r) => r.name === (original || rule.name));
    index = found >= 0 ? found : stored.length;
    stored[index] = rule;
    return { rules: stored };
  });
  if (!issues) return redirectWithNotice(reply, LIST, 'saved');
  take(issues);
  return formPage(ctx, reply, state);
}

/** Deletes a rule, once confirmed. */
async function deleteRule(ctx: ServiceContext, request: Request<{ name: string }>, reply: FastifyReply) {
  const session = request.appSession!;
  const { name } = request.params;
  const current = await currentConfig(ctx, session);
  const rule = current.rules?.find((r) => r.name === name);
  if (!rule) return problemPage(reply, 404, 'Not found', NO_RULE, session);
  if (field(request.body, 'confirm') !== 'yes') {
    const body = confirmCard(session, {
      title: 'Delete this rule?',
      message: html`“${rule.name}” (${rule.effect} for <code>${rule.tool}</code>) stops deciding new holds at
        once. Holds it already decided keep their decision.`,
      action: `${ruleUrl(name)}/delete`,
      fields: versionPassedOn(request.body),
      button: 'Delete rule',
      back: LIST,
    });
    return sendPage(reply, await adminPage(ctx, session, { title: 'Delete rule', active: 'rules' }, body));
  }
  const issues = await applyChange(ctx, session, readAtOf(request.body), (now) => ({
    rules: (now.rules ?? []).filter((r) => r.name !== name),
  }));
  if (!issues) return redirectWithNotice(reply, LIST, 'deleted');
  const rules = (current.rules ?? []).filter((r) => r.name !== name);
  const problems = issues.map((issue) => describeIssue(issue, { rules }));
  return sendPage(reply, await overview(ctx, session, null, problems), 422);
}

export function rulePages(app: FastifyInstance, { ctx }: PageDeps) {
  type Named = Route<{ name: string }>;
  app.get<Route>(LIST, ADMIN, (request, reply) => listOrNew(ctx, request, reply));
  app.get<Named>(`${LIST}/:name`, ADMIN, (request, reply) => editForm(ctx, request, reply));
  app.post<Route>(LIST, ADMIN, (request, reply) => saveRule(ctx, request, reply, ''));
  app.post<Named>(`${LIST}/:name`, ADMIN, (request, reply) =>
    saveRule(ctx, request, reply, request.params.name),
  );
  app.post<Named>(`${LIST}/:name/delete`, ADMIN, (request, reply) => deleteRule(ctx, request, reply));
  app.post<Route>('/app/admin/tools', ADMIN, (request, reply) =>
    classifyTool(ctx, request, reply, (session, problems) => overview(ctx, session, null, problems)),
  );
}
