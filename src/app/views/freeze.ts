/** The kill switch's page (`/app/admin/freeze`) and the banner every app page shows while frozen. */
import type { AppSession } from '../../services/sign-in.ts';
import { type Html, html, when } from '../html.ts';
import { csrfField } from './form-fields.ts';

export const FREEZE_PAGE = '/app/admin/freeze';

/** Shown at the top of every page of a frozen workspace (the inbox too). */
export const frozenBanner = (workspace: AppSession['workspace']) =>
  when(
    workspace.frozenAt !== null,
    () =>
      html`<p class="error" role="alert" id="frozen">
        This workspace is frozen: every new hold is denied, nothing is approved (rejecting still works) and no
        approved MCP call runs until an admin unfreezes it. Reason: ${workspace.frozenReason}
      </p>`,
  );

export const freezeNotice = (key: string | undefined) =>
  key === 'frozen' ? 'Frozen.' : key === 'unfrozen' ? 'Unfrozen.' : null;

/** Freeze with a reason, or unfreeze; each asks to confirm first. */
export function freezeBody(session: AppSession, problem: string | null): Html {
  const { workspace } = session;
  const frozen = workspace.frozenAt !== null;
  return html`<h1>Freeze</h1>
    <p>
      In an incident, freeze the workspace to stop every agent at once: every new hold, through the API or the
      MCP proxy, is denied with your reason, and approved MCP calls not yet run wait. Holds already waiting
      stay waiting: they may be rejected, but nobody approves them until you unfreeze, so no agent acts on an
      approval. Freezing and unfreezing are recorded in the evidence and sent to the webhook.
    </p>
    ${when(problem, () => html`<p class="error" role="alert">${problem}</p>`)}
    ${
      frozen
        ? html`<form method="post" action="${FREEZE_PAGE}/unfreeze" class="card">
            <p>Frozen by ${workspace.frozenBy}: ${workspace.frozenReason}</p>
            ${csrfField(session)}
            <button type="submit">Unfreeze…</button>
          </form>`
        : html`<form method="post" action="${FREEZE_PAGE}" class="card">
            ${csrfField(session)}
            <label for="reason">Reason (shown in every denial while frozen)</label>
            <input id="reason" name="reason" type="text" required maxlength="500" />
            <button type="submit" class="reject">Freeze…</button>
          </form>`
    }`;
}
