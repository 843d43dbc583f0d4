/**
 * Sign-in (`/app/admin/sign-in`): the workspace's identity provider, `sign_in: { oidc }` in the workspace
 * file, saved through the same versioned apply as every admin form; and a test of its connection.
 */
import type { FastifyInstance } from 'fastify';
import { callbackUrl, testOidcConnection } from '../../../services/oidc.ts';
import { sealedSecretOf } from '../../../services/oidc-config.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import { redirectWithNotice, takeNotice } from '../../flash.ts';
import { attachIssues, type FieldErrors } from '../../forms/form.ts';
import { parseSignInForm, type SignInValues, signInValues } from '../../forms/sign-in.ts';
import { html } from '../../html.ts';
import { type Form, type PageDeps, sendPage } from '../../respond.ts';
import { issueSummary } from '../../views/form-fields.ts';
import { signInForm, testConnectionForm } from '../../views/sign-in-settings.ts';
import { ADMIN, adminPage, applyChange, currentConfig, describeIssue, readAtOf } from './shared.ts';

const PATH = '/app/admin/sign-in';

interface Shown {
  version: number | undefined;
  values: SignInValues;
  notice?: string | null;
  errors?: FieldErrors;
  problems?: string[];
  tested?: { ok: boolean; text: string } | null;
}

async function signInPage(ctx: PageDeps['ctx'], session: AppSession, shown: Shown) {
  const secretStored = (await sealedSecretOf(ctx.db, session.workspace.id)) !== null;
  return adminPage(
    ctx,
    session,
    { title: 'Sign-in', active: 'sign-in', notice: shown.notice },
    html`<h1>Sign-in with your identity provider</h1>
      <p>
        Members sign in with your company's OpenID Connect provider, found by the e-mail address it has
        verified. Register this redirect URI with the provider: <code>${callbackUrl(ctx)}</code>. Give your
        people this sign-in page: <code>${ctx.publicUrl}/app/login?workspace=${session.workspace.slug}</code>.
      </p>
      ${issueSummary(shown.problems ?? [])}
      ${signInForm(session, { ...shown, secretStored, errors: shown.errors ?? {} })}
      ${testConnectionForm(session, shown.tested ?? null)}`,
  );
}

export function signInSettingsPages(app: FastifyInstance, { ctx }: PageDeps) {
  app.get(PATH, ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const notice = takeNotice(request, reply)?.key === 'saved' ? 'Sign-in saved.' : null;
    const config = await currentConfig(ctx, session);
    const shown = { version: config.version, values: signInValues(config), notice };
    return sendPage(reply, await signInPage(ctx, session, shown));
  });

  app.post<{ Body: Form }>(PATH, ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const { values, change } = parseSignInForm(request.body);
    const version = readAtOf(request.body);
    const issues = await applyChange(ctx, session, version, () => change);
    if (!issues) return redirectWithNotice(reply, PATH, 'saved');
    const byPath: FieldErrors = {};
    const problems = attachIssues(issues, 'sign_in.oidc', byPath).map((issue) =>
      describeIssue(issue, change),
    );
    // `roles.<value>` is the roles field's.
    const errors: FieldErrors = {};
    for (const [path, message] of Object.entries(byPath)) errors[path.split('.')[0]!] ??= message;
    const page = await signInPage(ctx, session, { version, values, errors, problems });
    return sendPage(reply, page, 422);
  });

  app.post(`${PATH}/test`, ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const result = await testOidcConnection(ctx, session.workspace.id);
    const tested = result.ok
      ? { ok: true, text: `Connected: the provider answers as ${result.issuer}.` }
      : { ok: false, text: `Not connected: ${result.problem}` };
    const config = await currentConfig(ctx, session);
    const shown = { version: config.version, values: signInValues(config), tested };
    return sendPage(reply, await signInPage(ctx, session, shown));
  });
}
