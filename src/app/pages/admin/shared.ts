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
import { Html, html, when } from '../../html.ts';
import { field, type Form } from '../../respond.ts';
import { layout } from '../../layout.ts';

export const ADMIN = { config: { role: 'admin' as const } };

export const csrfField = (session: AppSession) =>
  html`<input type="hidden" name="_csrf" value="${session.csrfToken}" />`;

/** The fields of a form that changes the configuration: the CSRF token and the version it was read at. */
export const configFields = (session: AppSession, version: number | undefined) =>
  html`${csrfField(session)}${when(
    version !== undefined,
    () => html`<input type="hidden" name="config_version" value="${String(version)}" />`,
  )}`;

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

export type VersionedConfig = Awaited<ReturnType<typeof currentConfig>>;

/**
 * The configuration and the version to put in its forms, read in that order: a change that lands in
 * between is then in the page but not in its version, so saving over it is refused, never lost.
 */
export async function currentConfig(ctx: ServiceContext, session: AppSession) {
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

/** The problems that stopped a change, at the top of a page; it takes the focus, so it is read first. */
export const issueSummary = (messages: string[]) =>
  when(
    messages.length > 0,
    () =>
      html`<div class="error" role="alert" id="problems" tabindex="-1" autofocus>
        <p><strong>Nothing was changed.</strong> ${messages.length === 1 ? 'One problem:' : 'Problems:'}</p>
        <ul>
          ${messages.map((message) => html`<li>${message}</li>`)}
        </ul>
      </div>`,
  );

/** A field's own error, next to it; `describedBy` ties it to the input for screen readers. */
export const fieldError = (id: string, message: string | undefined) =>
  when(message, () => html`<p class="error" id="${id}-error">${message}</p>`);

export const describedBy = (id: string, message: string | undefined) =>
  message ? html` aria-invalid="true" aria-describedby="${id}-error"` : null;

/** A labelled input with its own error; `extra` holds its other attributes (`required`, limits). */
export const inputField = (field: {
  id: string;
  name: string;
  label: Html | string;
  type: string;
  value: string;
  error: string | undefined;
  extra?: Html | null;
}) =>
  html`<label for="${field.id}">${field.label}</label>
    <input
      id="${field.id}"
      name="${field.name}"
      type="${field.type}"
      value="${field.value}"
      ${field.extra ?? null}
      ${describedBy(field.id, field.error)}
    />
    ${fieldError(field.id, field.error)}`;

export const selected = (yes: boolean) => (yes ? html` selected` : null);
export const checked = (yes: boolean) => (yes ? html` checked` : null);

/** The second step of a destructive action: the same form again, with `confirm=yes`. */
export function confirmCard(
  session: AppSession,
  options: {
    title: string;
    message: Html | string;
    action: string;
    fields: Record<string, string>;
    button: string;
    back: string;
  },
): Html {
  return html`<div class="narrow card">
    <h1>${options.title}</h1>
    <p>${options.message}</p>
    <form method="post" action="${options.action}" class="decide">
      ${csrfField(session)}
      ${Object.entries(options.fields).map(
        ([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`,
      )}
      <input type="hidden" name="confirm" value="yes" />
      <div class="buttons">
        <button type="submit" class="reject">${options.button}</button>
        <a class="button secondary" href="${options.back}">Cancel</a>
      </div>
    </form>
  </div>`;
}
