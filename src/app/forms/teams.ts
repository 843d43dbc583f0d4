/** The Teams form: the channel this workspace's waiting holds are posted to (`teams: { channel }`). */
import { z } from 'zod';
import type { WorkspaceConfig } from '../../services/config-file.ts';
import type { Form } from '../respond.ts';
import { text } from './form.ts';

// One text field, which any form gives: parsing cannot fail. The file's check says what a channel is.
const TeamsForm = z.object({ channel: text() });

/** The channel posted, and the change it makes: none when empty. */
export function parseTeamsForm(form: Form | undefined): { channel: string; change: WorkspaceConfig } {
  const { channel } = TeamsForm.parse(form ?? {});
  return { channel, change: { teams: channel ? { channel } : null } };
}
