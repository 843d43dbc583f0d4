/** The Widget page's form: which embed token to revoke, by the hash the token table shows. */
import { z } from 'zod';
import type { Form } from '../respond.ts';
import { type ParsedForm, parseForm, text } from './form.ts';

const RevokeForm = z.object({ token: text().pipe(z.string().min(1, 'Choose a token to revoke.')) });

export const readRevokeForm = (form: Form | undefined): ParsedForm<z.output<typeof RevokeForm>> =>
  parseForm(RevokeForm, form);
