// Passkeys (src/services/passkey-enrolment.ts, passkey-sign-in.ts, passkeys.ts): enrolling one, signing in with
// one, and approving with one.
// No library: the server's WebAuthn options are JSON with bytes in base64url, and what the authenticator
// answers goes back to the server the same way, in a hidden field of an ordinary form post.
//
// - form[data-passkey="enrol" | "sign-in"]: fetches the ceremony's options from data-passkey-options,
//   asks the authenticator (for an enrolment, an existing passkey first confirms it when there is one),
//   fills the fields `ceremony`, `response` (and `confirmation`), and sends the form.
// - A form with input[data-passkey-challenge]: its Approve button first asks the member's passkey to sign
//   the challenge, the hash of this exact action, and sends the assertion in that field. Its Approve with
//   changes button first asks the server for the challenge of the changed call (data-passkey-changes-url).
'use strict';

const fromBase64url = (text) =>
  Uint8Array.from(atob(text.replaceAll('-', '+').replaceAll('_', '/')), (c) => c.charCodeAt(0)).buffer;

const toBase64url = (buffer) => {
  let binary = '';
  for (const byte of new Uint8Array(buffer)) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
};

const credentialList = (list) => (list ?? []).map((item) => ({ ...item, id: fromBase64url(item.id) }));

function say(form, text) {
  const out = form.querySelector('[data-passkey-status]');
  if (out) out.textContent = text;
}

async function ceremonyOptions(form) {
  const csrf = form.querySelector('input[name="_csrf"]');
  const answer = await fetch(form.dataset.passkeyOptions, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(csrf ? { _csrf: csrf.value } : {}),
    credentials: 'same-origin',
  });
  if (!answer.ok) throw new Error('no options');
  return answer.json();
}

function assertionJson(credential) {
  const response = credential.response;
  return {
    id: credential.id,
    rawId: toBase64url(credential.rawId),
    type: credential.type,
    response: {
      clientDataJSON: toBase64url(response.clientDataJSON),
      authenticatorData: toBase64url(response.authenticatorData),
      signature: toBase64url(response.signature),
      ...(response.userHandle ? { userHandle: toBase64url(response.userHandle) } : {}),
    },
    clientExtensionResults: credential.getClientExtensionResults(),
  };
}

async function enrol(form) {
  const { ceremony, options, confirm } = await ceremonyOptions(form);
  // A member who has a passkey confirms with it first (over the same challenge); the server refuses a
  // new passkey that neither an existing one nor a link sent to the member's e-mail vouches for.
  if (confirm) {
    const existing = await navigator.credentials.get({
      publicKey: {
        ...confirm,
        challenge: fromBase64url(confirm.challenge),
        allowCredentials: credentialList(confirm.allowCredentials),
      },
    });
    form.elements.namedItem('confirmation').value = JSON.stringify(assertionJson(existing));
  }
  const credential = await navigator.credentials.create({
    publicKey: {
      ...options,
      challenge: fromBase64url(options.challenge),
      user: { ...options.user, id: fromBase64url(options.user.id) },
      excludeCredentials: credentialList(options.excludeCredentials),
    },
  });
  const response = credential.response;
  return {
    ceremony,
    response: {
      id: credential.id,
      rawId: toBase64url(credential.rawId),
      type: credential.type,
      response: {
        clientDataJSON: toBase64url(response.clientDataJSON),
        attestationObject: toBase64url(response.attestationObject),
        transports: response.getTransports ? response.getTransports() : [],
      },
      clientExtensionResults: credential.getClientExtensionResults(),
    },
  };
}

async function signIn(form) {
  const { ceremony, options } = await ceremonyOptions(form);
  const credential = await navigator.credentials.get({
    publicKey: {
      ...options,
      challenge: fromBase64url(options.challenge),
      allowCredentials: credentialList(options.allowCredentials),
    },
  });
  return { ceremony, response: assertionJson(credential) };
}

/**
 * The challenge of an approval with changes: the hash of the call as the form's boxes change it, made
 * by the server (data-passkey-changes-url); it says why when it refuses the changes.
 */
async function changedChallenge(form, field) {
  const response = await fetch(field.dataset.passkeyChangesUrl, {
    method: 'POST',
    headers: { accept: 'application/json' },
    body: new URLSearchParams(new FormData(form)),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok || typeof answer.challenge !== 'string') {
    const refused = new Error(answer.message ?? 'The changes could not be checked. Try again.');
    refused.name = 'ChangesRefused';
    throw refused;
  }
  return answer.challenge;
}

/** The member's passkey signs the action: the challenge is its hash, made by the server. */
async function signAction(field, challenge) {
  const credential = await navigator.credentials.get({
    publicKey: {
      challenge: fromBase64url(challenge),
      rpId: location.hostname,
      userVerification: 'required',
      timeout: 120_000,
      allowCredentials: (field.dataset.passkeyCredentials ?? '')
        .split(' ')
        .filter(Boolean)
        .map((id) => ({ type: 'public-key', id: fromBase64url(id) })),
    },
  });
  return assertionJson(credential);
}

document.addEventListener('submit', async (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || form.dataset.passkeyDone === 'yes') return;
  const kind = form.dataset.passkey;
  const field = form.querySelector('input[data-passkey-challenge]');
  const changed = event.submitter?.value === 'approve_changed';
  const approving = field !== null && (event.submitter?.value === 'approve' || changed);
  if (!kind && !approving) return;
  event.preventDefault();
  const submitter = event.submitter;
  say(form, 'Waiting for your passkey…');
  try {
    if (approving) {
      const challenge = changed ? await changedChallenge(form, field) : field.dataset.passkeyChallenge;
      field.value = JSON.stringify(await signAction(field, challenge));
    } else {
      const made = kind === 'enrol' ? await enrol(form) : await signIn(form);
      form.elements.namedItem('ceremony').value = made.ceremony;
      form.elements.namedItem('response').value = JSON.stringify(made.response);
    }
  } catch (error) {
    say(
      form,
      error && error.name === 'ChangesRefused'
        ? `Not approved: ${error.message}`
        : error && error.name === 'NotAllowedError'
          ? 'No passkey was used: it was cancelled or timed out. Try again.'
          : 'No passkey was used: this browser or authenticator could not do it.',
    );
    return;
  }
  say(form, '');
  form.dataset.passkeyDone = 'yes';
  form.requestSubmit(submitter ?? undefined);
});
