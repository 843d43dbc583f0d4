/** The approve form's passkey prompt (static/passkey.js signs the action with it). */
import type { PasskeyPrompt } from '../../services/passkeys.ts';
import { type Html, html, when } from '../html.ts';

export const PASSKEY_SCRIPT = html`<script src="/app/static/passkey.js" defer></script>`;

/**
 * The hidden field an approve form carries when its hold needs a passkey signature, with a word on it.
 * `changesUrl`: where the script asks for the challenge of an approval with changes, when the form
 * offers them.
 */
export function passkeyField(prompt: PasskeyPrompt | null, changesUrl: string | null = null): Html | null {
  if (!prompt) return null;
  return html`<input
      type="hidden"
      name="passkey"
      value=""
      data-passkey-challenge="${prompt.challenge}"
      data-passkey-credentials="${prompt.credentials.join(' ')}"
      ${when(changesUrl, () => html`data-passkey-changes-url="${changesUrl}"`)}
    />
    <p class="passkey-note">
      <strong>This approval must be signed with your passkey</strong>${
        prompt.credentials.length > 0
          ? ': Approve asks your device to sign this exact action.'
          : html`, and you have none yet: <a href="/app/settings/passkeys">add one</a> first (signed in to the
              app).`
      }
      <span class="muted" data-passkey-status role="status"></span>
    </p>
    ${PASSKEY_SCRIPT}`;
}
