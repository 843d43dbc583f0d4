/** Admin pages: registered here, one module each. */
import type { FastifyInstance } from 'fastify';
import type { PageDeps } from '../respond.ts';
import { brandingPages } from './admin/branding.ts';
import { freezePages } from './admin/freeze.ts';
import { groupPages } from './admin/groups.ts';
import { keyPages } from './admin/keys.ts';
import { mcpServerPages } from './admin/mcp-servers.ts';
import { memberPages } from './admin/members.ts';
import { rulePages } from './admin/rules.ts';
import { signInSettingsPages } from './admin/sign-in.ts';
import { slackPages } from './admin/slack.ts';
import { teamsPages } from './admin/teams.ts';
import { webhookPages } from './admin/webhook.ts';

export function adminPages(app: FastifyInstance, deps: PageDeps) {
  rulePages(app, deps);
  memberPages(app, deps);
  groupPages(app, deps);
  keyPages(app, deps);
  brandingPages(app, deps);
  mcpServerPages(app, deps);
  webhookPages(app, deps);
  slackPages(app, deps);
  teamsPages(app, deps);
  signInSettingsPages(app, deps);
  freezePages(app, deps);
}
