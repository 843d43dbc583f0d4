/**
 * The webhook form, read: the endpoint's URL, required here; whether it is one the service may send to
 * is the workspace file's check, whose issues come back by path (`webhook.url`) next to the field.
 */
import { z } from 'zod';
import type { WorkspaceConfig } from '../../services/config-file.ts';
import type { Form } from '../respond.ts';
import { parseForm, text } from './form.ts';

export type WebhookEntry = NonNullable<WorkspaceConfig['webhook']>;

const webhookForm = z.object({ url: text().refine((url) => url !== '', 'Enter the URL of your receiver.') });

export type WebhookInput = z.output<typeof webhookForm>;

export const parseWebhookForm = (form: Form | undefined) => parseForm(webhookForm, form);

/** The URL as typed, to show a refused form again. */
export const typedUrl = (form: Form | undefined) => text().parse(form?.url);

/** The `webhook` entry of the workspace file: the stored one with the form's fields over it. */
export const webhookEntry = (input: WebhookInput, stored: WebhookEntry | null | undefined): WebhookEntry => ({
  ...stored,
  url: input.url,
});
