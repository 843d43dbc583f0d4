/**
 * What the admin pages share: every change is a partial workspace file, made from the configuration
 * as it is inside the transaction that applies it (`editConfig`), checked by `parseConfig` and
 * applied exactly as `approvals apply` does (so each one is evidenced as `config.applied`). Every
 * form carries the version the page was read at: a save that changes an item someone changed since is
 * refused with who changed it and when. Problems come back as field issues and are shown in the page.
 */
import { currentConfigVersion, editConfig, exportConfig } from '../../../services/apply-config.ts';
import { storedRuleNote } from '../../../services/config-cross-check.ts';
import { parseConfig, type WorkspaceConfig } from '../../../services/config-file.ts';
import type { ServiceContext } from '../../../services/context.ts';
import { type FieldIssue, ServiceError } from '../../../services/errors.ts';
import { waitingIdsOf } from '../../../services/inbox.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import type { Html } from '../../html.ts';
import { field, type Form } from '../../respond.ts';
import { layout } from '../../layout.ts';
import type { VersionedConfig } from '../../views/form-fields.ts';

export const ADMIN = { config: { role: 'admin' as const } };

/** The version a confirmation step passes on, as a hidden field of its own (none when none was posted). */
export const versionPassedOn = (body: Form): Record<string, string> => {
  const version = readAtOf(body);
  return version === undefined ? {} : { config_version: String(version) };
};

/**
 * The version a posted form was read at. A form without one (a page rendered before versions existed)
 * is still applied one item at a time to the configuration as it is, only without the check.
 */
export function readAtOf(body: Form): number | undefined {
  const text = field(body, 'config_version');
  const version = Number(text);
  return text !== '' && Number.isSafeInteger(version) && version >= 0 ? version : undefined;
}

/** An admin page in the app's shell. */
export async function adminPage(
  ctx: ServiceContext,
  session: AppSession,
  options: { title: string; active: string; notice?: string | null },
  body: Html,
): Promise<Html> {
  const pending = (await waitingIdsOf(ctx, session.member)).length;
  // Admin pages hold forms being filled in: they are not refreshed live (it would drop a draft rule).
  return layout({ ...options, session, pending, live: false }, body);
}

/** The issues of a refused change, whatever threw them. */
function issuesOf(error: ServiceError): FieldIssue[] {
  return error.issues.length > 0 ? error.issues : [{ field: '(change)', message: error.message }];
}

/** Checks a partial workspace file the way `approvals apply` does; throws nothing. */
export function checkConfig(config: WorkspaceConfig): { config: WorkspaceConfig } | { issues: FieldIssue[] } {
  try {
    return { config: parseConfig(JSON.stringify(config)).config };
  } catch (error) {
    if (error instanceof ServiceError) return { issues: issuesOf(error) };
    throw error;
  }
}

/**
 * Applies the partial workspace file `edit` makes of the configuration as it is then, as of the
 * version the form was read at. Returns the issues when it is refused (nothing is changed then), or
 * null when it was applied.
 */
export async function applyChange(
  ctx: ServiceContext,
  session: AppSession,
  readAt: number | undefined,
  edit: (current: WorkspaceConfig) => WorkspaceConfig,
  /** Hears what the change answers (a new webhook secret, shown once). */
  onApplied?: (result: Awaited<ReturnType<typeof editConfig>>) => void,
): Promise<FieldIssue[] | null> {
  try {
    // Applied first, then reported: `onApplied?.(await …)` would skip the apply when nobody listens.
    const applied = await editConfig(ctx, session.workspace, {
      actor: `${session.member.name} (${session.member.email})`,
      actorMemberId: session.member.id,
      readAt,
      edit,
    });
    onApplied?.(applied);
    return null;
  } catch (error) {
    if (error instanceof ServiceError) return issuesOf(error);
    throw error;
  }
}

/**
 * The configuration and the version to put in its forms, read in that order: a change that lands in
 * between is then in the page but not in its version, so saving over it is refused, never lost.
 */
export async function currentConfig(ctx: ServiceContext, session: AppSession): Promise<VersionedConfig> {
  const version = await currentConfigVersion(ctx, session.workspace);
  return Object.assign(await exportConfig(ctx, session.workspace), { version });
}

/** An issue in words: `rules.3.approvers.0` becomes `Rule "Payments", approvers.0`. */
export function describeIssue(issue: FieldIssue, config: WorkspaceConfig): string {
  const [part, index, ...rest] = issue.field.split('.');
  const where = rest.length > 0 ? ` (${rest.join('.')})` : '';
  if (part === 'rules' && index !== undefined) {
    // An issue names a stored rule itself when the change leaves the rules out.
    if (issue.rule !== undefined)
      return `Rule “${issue.rule}”${where}: ${issue.message.slice(storedRuleNote(issue.rule).length)}`;
    const rule = config.rules?.[Number(index)]?.name ?? `#${Number(index) + 1}`;
    return `Rule “${rule}”${where}: ${issue.message}`;
  }
  if (part === 'members' && index !== undefined) {
    const member = config.members?.[Number(index)];
    return `Member ${member?.email ?? `#${Number(index) + 1}`}${where}: ${issue.message}`;
  }
  if (part === 'groups' && index !== undefined) return `Group “${index}”: ${issue.message}`;
  if (part === 'mcp_servers' && index !== undefined) {
    const server = config.mcp_servers?.[Number(index)];
    return `Server “${server?.slug ?? `#${Number(index) + 1}`}”${where}: ${issue.message}`;
  }
  return `${issue.field === '(change)' || issue.field === '(file)' ? '' : `${issue.field}: `}${issue.message}`;
}
