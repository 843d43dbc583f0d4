/** The approve form's passkey prompt (static/passkey.js signs the action with it). */
import type { PasskeyPrompt } from '../../services/passkeys.ts';
import { type Html, html } from '../html.ts';

export const PASSKEY_SCRIPT = html`<script src="/app/static/passkey.js" defer></script>`;

/** The hidden field an approve form carries when its hold needs a passkey signature, with a word on it. */
export function passkeyField(prompt: PasskeyPrompt | null): Html | null {
  if (!prompt) return null;
  return html`<input
      type="hidden"
      name="passkey"
      value=""
      data-passkey-challenge="${prompt.challenge}"
      data-passkey-credentials="${prompt.credentials.join(' ')}"
    />
    <p class="passkey-note">
      ${
        prompt.credentials.length > 0
          ? 'This approval must be signed with your passkey: approving asks your device to sign this exact action.'
          : html`This approval must be signed with a passkey, and you have none yet:
              <a href="/app/settings/passkeys">add one</a> first (signed in to the app).`
      }
    </p>
    <p class="muted" data-passkey-status role="status"></p>
    ${PASSKEY_SCRIPT}`;
}
