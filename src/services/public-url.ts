/**
 * The address the service answers at, recorded at every start where the command line can read it: a
 * link made there (`approvals users invite`) points at the running service, whatever port it took.
 */
import { readServiceSetting, writeServiceSetting } from '../store/service-settings.ts';
import type { ServiceContext } from './context.ts';

export const recordPublicUrl = (ctx: ServiceContext) =>
  writeServiceSetting(ctx.db, 'public_url', ctx.publicUrl);

export const recordedPublicUrl = (ctx: ServiceContext) => readServiceSetting(ctx.db, 'public_url');
