/** The Slack form: the channel this workspace's waiting holds are posted to (`slack: { channel }`). */
import { z } from 'zod';
import type { WorkspaceConfig } from '../../services/config-file.ts';
import type { Form } from '../respond.ts';
import { text } from './form.ts';

// One text field, which any form gives: parsing cannot fail. The file's check says what a channel is.
const SlackForm = z.object({ channel: text() });

/** The channel posted, and the change it makes: none when empty. */
export function parseSlackForm(form: Form | undefined): { channel: string; change: WorkspaceConfig } {
  const { channel } = SlackForm.parse(form ?? {});
  return { channel, change: { slack: channel ? { channel } : null } };
}
