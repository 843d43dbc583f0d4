/**
 * The checks across the parts of an `apply` file (decisions.md, "The file apply takes"): members named
 * twice, groups and delegations naming non-members, approvers that resolve to too few members. Each
 * part's own checks are its schema's (config-schema.ts).
 */
import type { RuleDefinition } from '../domain/rules.ts';
import type { ParsedConfig, Path, WorkspaceConfig } from './config-file.ts';
import type { FieldIssue } from './errors.ts';

/** How an issue's message names the stored rule it is about (the file has no line for it). */
export const storedRuleNote = (rule: string) => `(stored rule "${rule}") `;

/** Reports a problem at a path of the file. */
type Report = (path: Path, message: string) => void;

/** The workspace's members as they would be after applying the file: each one's role, by e-mail. */
type Roles = Map<string, string>;

/**
 * Checks the workspace as it would be after applying the file: the file's parts, with the stored
 * workspace filling in what the file leaves out (so removing a member a stored rule needs is refused).
 */
export function crossCheck(
  config: WorkspaceConfig,
  stored: {
    members: { email: string; role: string }[];
    groups: Map<string, string[]>;
    rules: RuleDefinition[];
  },
  lineOf: ParsedConfig['lineOf'],
): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const rulesInFile = config.rules !== undefined;
  const issue: Report = (path, message) => {
    // A stored rule that the file would break has no line: name it instead.
    const stale = path[0] === 'rules' && !rulesInFile;
    const rule = stale ? stored.rules[path[1] as number] : undefined;
    issues.push({
      field: path.join('.'),
      message: rule ? `${storedRuleNote(rule.name)}${message}` : message,
      line: stale ? undefined : lineOf(path),
      ...(rule && { rule: rule.name }),
    });
  };
  const members =
    config.members?.map((m) => ({ email: m.email.toLowerCase(), role: m.role })) ?? stored.members;
  const roleOf: Roles = new Map(members.map((m) => [m.email, m.role]));
  config.members?.forEach((m, index) => {
    if (members.findIndex((other) => other.email === m.email.toLowerCase()) !== index) {
      issue(['members', index, 'email'], 'is listed twice');
    }
  });
  const groups = config.groups
    ? new Map(
        Object.entries(config.groups).map(([name, emails]) => [name, emails.map((e) => e.toLowerCase())]),
      )
    : new Map(
        [...stored.groups].map(([name, emails]) => [name, emails.filter((email) => roleOf.has(email))]),
      );
  checkGroups(config, roleOf, issue);
  checkMcpServers(config, issue);
  checkDelegations(config, roleOf, issue);
  const resolve = approverResolver(members, roleOf, groups, issue);
  checkRules(config.rules ?? stored.rules, roleOf, resolve, issue);
  checkSelfApprovals(config, issue);
  return issues;
}

/** Every approval passkey-signed leaves none to give in an MCP client, which cannot sign. */
function checkSelfApprovals(config: WorkspaceConfig, issue: Report) {
  if (!config.approvals?.require_passkey) return;
  config.rules?.forEach((r, index) => {
    if (r.self_approval)
      issue(
        ['rules', index, 'self_approval'],
        'cannot go with approvals.require_passkey: an MCP client cannot give a passkey signature',
      );
  });
}

function checkGroups(config: WorkspaceConfig, roleOf: Roles, issue: Report) {
  for (const [name, emails] of Object.entries(config.groups ?? {})) {
    emails.forEach((email, index) => {
      if (!roleOf.has(email.toLowerCase()))
        issue(['groups', name, index], 'is not a member of the workspace');
      if (emails.findIndex((other) => other.toLowerCase() === email.toLowerCase()) !== index) {
        issue(['groups', name, index], 'is listed twice');
      }
    });
  }
}

function checkMcpServers(config: WorkspaceConfig, issue: Report) {
  config.mcp_servers?.forEach((server, index) => {
    const servers = config.mcp_servers!;
    if (servers.findIndex((other) => other.slug === server.slug) !== index) {
      issue(['mcp_servers', index, 'slug'], 'is listed twice');
    }
    if (servers.findIndex((other) => other.name === server.name) !== index) {
      issue(['mcp_servers', index, 'name'], 'is used by another server; it names the connection in rules');
    }
  });
}

function checkDelegations(config: WorkspaceConfig, roleOf: Roles, issue: Report) {
  config.members?.forEach((m, index) => {
    if (!m.delegate) return;
    const to = m.delegate.to.toLowerCase();
    const path = ['members', index, 'delegate', 'to'];
    if (to === m.email.toLowerCase()) issue(path, 'must be another member');
    else if (!roleOf.has(to)) issue(path, 'is not a member of the workspace');
    else if (roleOf.get(to) === 'viewer') issue(path, 'is a viewer; viewers do not decide');
  });
}

/** The members an approver entry names, or why it names none (a problem is reported at `path`). */
type Resolve = (approver: string, path: Path) => string[] | undefined;

function approverResolver(
  members: { email: string; role: string }[],
  roleOf: Roles,
  groups: Map<string, string[]>,
  issue: Report,
): Resolve {
  return (approver, path) => {
    const matching = approver.startsWith('role:')
      ? members.filter((m) => `role:${m.role}` === approver).map((m) => m.email)
      : approver.startsWith('group:')
        ? groups.get(approver.slice(6))
        : roleOf.has(approver.toLowerCase())
          ? [approver.toLowerCase()]
          : undefined;
    if (approver.startsWith('role:') && !['role:admin', 'role:approver'].includes(approver)) {
      issue(path, 'must be role:admin or role:approver');
      return undefined;
    }
    if (!matching) {
      issue(
        path,
        approver.startsWith('group:')
          ? 'names no group of the workspace'
          : 'is not a member of the workspace',
      );
    }
    return matching;
  };
}

/** Rule names are unique; an approval rule's approvers and escalation steps name enough members. */
function checkRules(rules: RuleDefinition[], roleOf: Roles, resolve: Resolve, issue: Report) {
  const names = new Set<string>();
  rules.forEach((r, index) => {
    if (names.has(r.name)) issue(['rules', index, 'name'], 'is used by another rule; rule names are unique');
    names.add(r.name);
    if (r.effect !== 'approval') return;
    r.escalate?.forEach((step, at) =>
      step.to.forEach((approver, i) => resolve(approver, ['rules', index, 'escalate', at, 'to', i])),
    );
    const eligible = new Set<string>();
    let unresolved = false;
    const approvers = r.approvers?.length ? r.approvers : ['role:admin'];
    approvers.forEach((approver, at) => {
      const path = r.approvers?.length ? ['rules', index, 'approvers', at] : ['rules', index];
      const matching = resolve(approver, path);
      if (!matching) unresolved = true;
      else for (const email of matching) if (roleOf.get(email) !== 'viewer') eligible.add(email);
    });
    const required = r.approvals_required ?? 1;
    if (!unresolved && eligible.size < required) {
      issue(
        r.approvals_required ? ['rules', index, 'approvals_required'] : ['rules', index, 'approvers'],
        `needs ${required} distinct approvers but only ${eligible.size} member(s) can approve`,
      );
    }
  });
}
