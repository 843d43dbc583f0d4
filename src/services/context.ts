import type { Mailer } from '../channels/email.ts';
import type { Db } from '../store/db.ts';
import type { AuditSigner } from './audit-signer.ts';
import type { ChainGuard } from './chain-guard.ts';
import type { CompiledRuleSets } from './evaluate-call.ts';
import type { HoldEvents } from './hold-events.ts';
import type { NotificationChannels } from './notifications.ts';
import type { ExecutionRecorder } from './record-execution.ts';
import type { Sealer } from './secrets.ts';

/** What every use case gets: storage, time, and the few settings services need. */
export interface ServiceContext {
  db: Db;
  /** Milliseconds since the epoch; tests move it. */
  now: () => number;
  signer: AuditSigner;
  /** Checks a chain's head before the signer extends it; freezes a chain that fails. */
  chainGuard: ChainGuard;
  holdEvents: HoldEvents;
  /** Allowed proxy calls' results, recorded behind their answers. */
  executions: ExecutionRecorder;
  publicUrl: string;
  legacyFreeMonthlyHolds: number;
  /** Requests a minute per workspace and Core API bucket (API_RATE_LIMIT), unless the workspace sets its own. */
  apiRateLimit: number;
  /** Tool calls a minute per API key to the MCP endpoints (MCP_RATE_LIMIT), unless the workspace sets its own; 0: no limit. */
  mcpRateLimit: number;
  /** Requests a minute per member to the app's pages (APP_RATE_LIMIT); 0: no limit. */
  appRateLimit: number;
  /** Requests a minute per member to the widget API (WIDGET_RATE_LIMIT); 0: no limit. */
  widgetRateLimit: number;
  compiledRuleSets: CompiledRuleSets;
  /** Absent when SMTP_URL is not set: no e-mail is sent. */
  mailer: Mailer | null;
  /** Seals credentials stored in the database (MCP upstream headers). */
  sealer: Sealer;
  /** Whether webhook and MCP upstream URLs may reach loopback and private addresses. */
  allowPrivateTargets: boolean;
  /** Whether PUBLIC_URL is https (cookies are then Secure). */
  secureCookies: boolean;
  /** Slack and SMS, where their settings are given (e-mail is `mailer`). */
  channels: NotificationChannels;
}
