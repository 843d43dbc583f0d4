/** The Teams form: the channel this workspace's waiting holds are posted to (`teams: { channel }`). */
import { z } from 'zod';
import type { WorkspaceConfig } from '../../services/config-file.ts';
import type { Form } from '../respond.ts';
import { text } from './form.ts';

/** Teams' "Get link to channel" has the id URL-encoded (`19%3a…%40thread.tacv2`): taken decoded. */
function decoded(id: string): string {
  try {
    return decodeURIComponent(id);
  } catch {
    return id; // not an encoding: the file's check says what is wrong with it
  }
}

// One text field, which any form gives: parsing cannot fail. The file's check says what a channel is.
const TeamsForm = z.object({ channel: text().transform(decoded) });

/** The channel posted, and the change it makes: none when empty. */
export function parseTeamsForm(form: Form | undefined): { channel: string; change: WorkspaceConfig } {
  const { channel } = TeamsForm.parse(form ?? {});
  return { channel, change: { teams: channel ? { channel } : null } };
}
