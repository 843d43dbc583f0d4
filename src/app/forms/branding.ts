/**
 * The branding form: the workspace's name, logo and accent colour, as the workspace file's `name` and
 * `branding`. The file's own check says what is wrong with them; the form only reads them.
 */
import { z } from 'zod';
import type { WorkspaceConfig } from '../../services/config-file.ts';
import type { FieldIssue } from '../../services/errors.ts';
import type { Form } from '../respond.ts';
import { attachIssues, type FieldErrors, text } from './form.ts';

export interface BrandingValues {
  name: string;
  logo_url: string;
  accent_color: string;
}

export const HEX_COLOUR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;

// Every field is text, which any form gives: parsing cannot fail.
const BrandingForm = z.object({
  name: text(),
  logo_url: text(),
  accent_color: text(),
  accent_picker: text(),
  /** What the text field and the picker showed when the page was drawn. */
  accent_was: text(),
  picker_was: text(),
  action: text(),
});

/** The posted form: the values, whether it only asks for a preview, and the change it makes. */
export function parseBrandingForm(form: Form | undefined): {
  values: BrandingValues;
  preview: boolean;
  change: WorkspaceConfig;
} {
  const posted = BrandingForm.parse(form ?? {});
  const typed = posted.accent_color;
  const picked = posted.accent_picker;
  // Two inputs for one colour: a changed text field wins, else a changed picker, else the text.
  const accent =
    typed !== posted.accent_was || !HEX_COLOUR.test(picked) || picked === posted.picker_was ? typed : picked;
  const values = { name: posted.name, logo_url: posted.logo_url, accent_color: accent };
  const change = {
    name: values.name,
    branding: { logo_url: values.logo_url || null, accent_color: values.accent_color || null },
  };
  return { values, preview: posted.action === 'preview', change };
}

/** The file's issues about the name and `branding.*` at the form's fields; returns the others. */
export function attachBrandingIssues(issues: readonly FieldIssue[], errors: FieldErrors): FieldIssue[] {
  return attachIssues(issues, 'branding', errors).filter((issue) => {
    if (issue.field !== 'name') return true;
    errors.name ??= issue.message;
    return false;
  });
}
