/** The sign-in page's form: the workspace's identity provider (`sign_in: { oidc }` in the workspace file). */
import { z } from 'zod';
import type { WorkspaceConfig } from '../../services/config-file.ts';
import type { Form } from '../respond.ts';
import { checkbox, text } from './form.ts';

const SignInForm = z.object({
  name: text(),
  issuer: text(),
  client_id: text(),
  client_secret: text(),
  roles_claim: text(),
  roles: text(),
  just_in_time: checkbox(),
  required: checkbox(),
});

export type SignInValues = z.output<typeof SignInForm>;

/**
 * The values posted and the change they make: no issuer, no provider. An empty secret keeps the stored
 * one; `roles` is one `claim value = role` a line (left as it is when a line has no `=`: the file's
 * check then names it).
 */
export function parseSignInForm(form: Form | undefined): { values: SignInValues; change: WorkspaceConfig } {
  const values = SignInForm.parse(form ?? {});
  if (!values.issuer) return { values, change: { sign_in: null } };
  const roles = Object.fromEntries(
    values.roles
      .split('\n')
      .map((line) => line.split('='))
      .filter((parts) => parts.length === 2 && parts[0]!.trim())
      .map(([value, role]) => [value!.trim(), role!.trim()]),
  ) as Record<string, 'admin' | 'approver' | 'viewer'>;
  const oidc = {
    name: values.name || 'your identity provider',
    issuer: values.issuer,
    client_id: values.client_id,
    ...(values.client_secret ? { client_secret: values.client_secret } : {}),
    ...(values.roles_claim ? { roles_claim: values.roles_claim } : {}),
    ...(Object.keys(roles).length > 0 ? { roles } : {}),
    just_in_time: values.just_in_time,
    required: values.required,
  };
  return { values, change: { sign_in: { oidc } } };
}

/** The stored configuration as the form shows it (the secret never). */
export function signInValues(config: WorkspaceConfig): SignInValues {
  const oidc = config.sign_in?.oidc;
  return {
    name: oidc?.name ?? '',
    issuer: oidc?.issuer ?? '',
    client_id: oidc?.client_id ?? '',
    client_secret: '',
    roles_claim: oidc?.roles_claim ?? '',
    roles: Object.entries(oidc?.roles ?? {})
      .map(([value, role]) => `${value} = ${role}`)
      .join('\n'),
    just_in_time: oidc?.just_in_time ?? false,
    required: oidc?.required ?? false,
  };
}
