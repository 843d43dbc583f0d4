/**
 * The forms of passkeys: adding one (`/app/settings/passkeys`), removing one, and signing in with one.
 * The browser's WebAuthn answer arrives as JSON in `response`; the service checks everything in it.
 */
import { z } from 'zod';
import type { Form } from '../respond.ts';
import { text } from './form.ts';

/** A JSON field: its value, or null when it is not JSON (the service refuses that as any bad answer). */
const jsonText = () =>
  text().transform((value): unknown => {
    try {
      return JSON.parse(value);
    } catch {
      return null;
    }
  });

const EnrolForm = z.object({
  ceremony: text(),
  response: jsonText(),
  name: text(),
  /** The signature of a passkey the member has, confirming a later one. */
  confirmation: text().transform((value) => value || null),
  /** The token of the e-mailed link the form came from, for a first passkey. */
  link: text().transform((value) => value || undefined),
});

const SignInForm = z.object({ ceremony: text(), response: jsonText() });

const RemoveForm = z.object({ id: text() });

// Every field is text, which any form gives: parsing these cannot fail.
export const readEnrolForm = (form: Form | undefined) => EnrolForm.parse(form ?? {});
export const readSignInForm = (form: Form | undefined) => SignInForm.parse(form ?? {});
export const readRemoveForm = (form: Form | undefined) => RemoveForm.parse(form ?? {});
