/** The forms of signing in: asking for a sign-in link, and the first run's setup. */
import { z } from 'zod';
import { appPath } from '../app-path.ts';
import type { Form } from '../respond.ts';
import { text } from './form.ts';

/** An address a sign-in link may be sent to; anything else gets no mail (and the same answer). */
const MAILABLE = /^[^\s@]+@[^\s@]+$/;

const LoginForm = z.object({
  email: text().transform((email) => (MAILABLE.test(email) && email.length <= 254 ? email : null)),
  /** Where to go after signing in: a path of the app, or nowhere in particular. */
  next: text().transform((next) => appPath(next)),
});

/** As typed: the service checks them, and the form shows them again with its problem. */
const SetupForm = z.object({ name: text(), slug: text(), admin_name: text(), admin_email: text() });
export type SetupValues = z.output<typeof SetupForm>;

// Every field is text, which any form gives: parsing these cannot fail.
export const readLoginForm = (form: Form | undefined) => LoginForm.parse(form ?? {});
export const readSetupForm = (form: Form | undefined): SetupValues => SetupForm.parse(form ?? {});
