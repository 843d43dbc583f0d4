/**
 * The route table of the Core API and the public pages the OpenAPI document describes: every operation
 * once, registered by api.ts and documented by openapi.ts from the same definitions.
 */
import type { Route } from './route-table.ts';
import { auditKeyRoute, auditRoutes } from './routes/audit.ts';
import { holdRoutes } from './routes/holds.ts';
import { receiptKeysRoute } from './routes/receipts.ts';
import { reportRoutes } from './routes/reports.ts';
import { statusPageRoutes } from './routes/status-page.ts';
import { workspaceConfigRoutes } from './routes/workspace-config.ts';
import { workspaceFreezeRoutes } from './routes/workspace-freeze.ts';

export const CORE_API: Route[] = [
  ...holdRoutes,
  ...workspaceConfigRoutes,
  ...workspaceFreezeRoutes,
  ...auditRoutes,
  ...reportRoutes,
  // Public: no API key.
  auditKeyRoute,
  receiptKeysRoute,
  ...statusPageRoutes,
];
