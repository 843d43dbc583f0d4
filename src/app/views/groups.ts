/** The Groups part of the Members page: each group with its members, and the form for a new one. */
import type { WorkspaceConfig } from '../../services/config-file.ts';
import type { AppSession } from '../../services/sign-in.ts';
import type { FieldErrors } from '../forms/form.ts';
import type { GroupValues } from '../forms/groups.ts';
import { sameEmail } from '../forms/members.ts';
import { type Html, html, when } from '../html.ts';
import { checked, configFields, describedBy, fieldError, type VersionedConfig } from './form-fields.ts';

/** A group's own URL (`/delete` below it). */
export const groupPath = (name: string) => `/app/admin/groups/${encodeURIComponent(name)}`;

/** A group form posted with problems: shown again as posted, in place of the saved one. */
export interface GroupDraft {
  /** Which form: a new group's, or the members of the group named in `values`. */
  mode: 'create' | 'edit';
  values: GroupValues;
  errors: FieldErrors;
}

function memberChoices(config: WorkspaceConfig, chosen: string[], idPrefix: string): Html {
  return html`<div class="row" style="gap:0.25rem 1.25rem">
    ${(config.members ?? []).map(
      (m, index) =>
        html`<label class="choice" for="${idPrefix}-${index}"
          ><input
            id="${idPrefix}-${index}"
            type="checkbox"
            name="members"
            value="${m.email}"
            ${checked(chosen.some((e) => sameEmail(e, m.email)))}
          />
          ${m.name} <span class="muted">${m.email}${m.role === 'viewer' ? ' · viewer' : ''}</span></label
        >`,
    )}
  </div>`;
}

function groupCard(
  config: VersionedConfig,
  session: AppSession,
  [name, emails]: [string, string[]],
  index: number,
  draft: GroupDraft | null,
): Html {
  const error = draft ? Object.values(draft.errors).join(' ') : '';
  return html`<section class="card" aria-labelledby="group-${index}">
    <h3 id="group-${index}">${name} <span class="muted">(${emails.length})</span></h3>
    <form method="post" action="${groupPath(name)}" class="decide">
      ${configFields(session, config.version)}
      <fieldset class="plain">
        <legend class="muted">Members of ${name}</legend>
        ${memberChoices(config, draft ? draft.values.members : emails, `g${index}`)}
      </fieldset>
      ${when(error, () => html`<p class="error" role="alert">${error}</p>`)}
      <div class="buttons"><button type="submit">Save members of ${name}</button></div>
    </form>
    <form method="post" action="${groupPath(name)}/delete" style="margin-top:0.5rem">
      ${configFields(session, config.version)}
      <button type="submit" class="link">Delete group ${name}…</button>
    </form>
  </section>`;
}

function newGroupCard(config: VersionedConfig, session: AppSession, draft: GroupDraft | null): Html {
  const errors = draft?.errors ?? {};
  return html`<section class="card" aria-labelledby="new-group">
    <h3 id="new-group">Create a group</h3>
    <form method="post" action="/app/admin/groups" class="decide">
      ${configFields(session, config.version)}
      <label for="group-name">Name (letters, digits, _ . -)</label>
      <input
        id="group-name"
        name="name"
        type="text"
        required
        maxlength="100"
        pattern="[A-Za-z0-9_.\\-]{1,100}"
        value="${draft?.values.name ?? ''}"
        ${describedBy('group-name', errors.name)}
      />
      ${fieldError('group-name', errors.name)}
      <fieldset class="plain" ${describedBy('group-members', errors.members)}>
        <legend><strong>Members</strong></legend>
        ${memberChoices(config, draft?.values.members ?? [], 'gnew')}
      </fieldset>
      ${fieldError('group-members', errors.members)}
      <div class="buttons"><button type="submit">Create group</button></div>
    </form>
  </section>`;
}

export function groupSection(config: VersionedConfig, session: AppSession, draft: GroupDraft | null): Html {
  const groups = Object.entries(config.groups ?? {});
  const draftOf = (name: string) => (draft?.mode === 'edit' && draft.values.name === name ? draft : null);
  return html`<h2 id="groups">Groups</h2>
    <p class="muted">Rules name a group as <code>group:&lt;name&gt;</code> in their approvers.</p>
    ${groups.length === 0 ? html`<p class="empty card">No groups yet.</p>` : null}
    ${groups.map((group, index) => groupCard(config, session, group, index, draftOf(group[0])))}
    ${newGroupCard(config, session, draft?.mode === 'create' ? draft : null)}`;
}
