/**
 * `sign_in: { oidc: {...} }` in the workspace file: the workspace's OpenID Connect client. Its secret is
 * stored sealed and never read back: export leaves it out, and a file without it keeps the stored one
 * while the issuer and client id stay the same (as MCP servers' headers are kept).
 */
import { z } from 'zod';
import type { Sql } from '../store/db.ts';
import { deleteOidcClient, findOidcClient, saveOidcClient } from '../store/oidc-clients.ts';
import { endSessionsOfNonAdmins } from '../store/sessions.ts';
import type { ServiceContext } from './context.ts';

const ROLE = z.enum(['admin', 'approver', 'viewer']);

/** An https issuer; http only on this machine (a development or test provider). */
const issuerUrl = z
  .url({ protocol: /^https?$/, error: 'must be an https URL' })
  .max(2000)
  .refine((url) => {
    const parsed = URL.parse(url);
    if (!parsed || parsed.username || parsed.password || parsed.search || parsed.hash) return false;
    return parsed.protocol === 'https:' || ['127.0.0.1', 'localhost', '[::1]'].includes(parsed.hostname);
  }, 'must be an https URL without credentials, query or fragment (http only for 127.0.0.1 or localhost)');

export const signInSchema = z
  .strictObject({
    oidc: z
      .strictObject({
        // Shown on the sign-in page: "Sign in with <name>".
        name: z.string().trim().min(1).max(100),
        issuer: issuerUrl,
        client_id: z.string().min(1).max(500),
        // Absent: the stored secret stays while issuer and client_id do; none stored: a public client.
        client_secret: z.string().min(1).max(2000).optional(),
        // The claim whose values `roles` maps (a string or a list of strings, such as `groups`).
        roles_claim: z.string().min(1).max(200).optional(),
        roles: z.record(z.string().min(1).max(500), ROLE).optional(),
        // A verified e-mail of the provider that is no member becomes one (the mapped role, or viewer).
        just_in_time: z.boolean().optional(),
        // Sign-in links and passkeys then only for admins (break-glass), each such sign-in evidenced.
        required: z.boolean().optional(),
      })
      .refine((oidc) => !oidc.roles || oidc.roles_claim, {
        path: ['roles_claim'],
        message: 'is needed with roles: the claim whose values they map',
      }),
  })
  .nullable()
  .optional();

export type SignInConfig = z.infer<typeof signInSchema>;

/** The stored client in the file's format, without its secret. */
export async function exportSignIn(sql: Sql, workspaceId: string): Promise<SignInConfig> {
  const client = await findOidcClient(sql, workspaceId);
  if (!client) return undefined;
  return {
    oidc: {
      name: client.displayName,
      issuer: client.issuer,
      client_id: client.clientId,
      ...(client.rolesClaim ? { roles_claim: client.rolesClaim } : {}),
      ...(Object.keys(client.roles).length > 0 ? { roles: client.roles } : {}),
      just_in_time: client.justInTime,
      required: client.required,
    },
  };
}

/** Applies `sign_in` (null: no sign-in with an identity provider); returns the evidence's part, without the secret. */
export async function applySignIn(
  tx: Sql,
  ctx: ServiceContext,
  workspaceId: string,
  declared: NonNullable<SignInConfig> | null,
) {
  if (!declared) {
    await deleteOidcClient(tx, workspaceId);
    return null;
  }
  const { client_secret: secret, ...oidc } = declared.oidc;
  const stored = await findOidcClient(tx, workspaceId);
  const keeps = stored && stored.issuer === oidc.issuer && stored.clientId === oidc.client_id;
  // Required from now on: no member but an admin stays signed in otherwise (sessions last 7 days).
  const ended = oidc.required && !stored?.required ? await endSessionsOfNonAdmins(tx, workspaceId) : 0;
  await saveOidcClient(tx, {
    workspaceId,
    displayName: oidc.name,
    issuer: oidc.issuer,
    clientId: oidc.client_id,
    clientSecretSealed: secret ? ctx.sealer.seal(secret) : keeps ? stored.clientSecretSealed : null,
    rolesClaim: oidc.roles_claim ?? null,
    roles: oidc.roles ?? {},
    justInTime: oidc.just_in_time ?? false,
    required: oidc.required ?? false,
    updatedAt: ctx.now(),
  });
  return {
    oidc: { ...oidc, new_client_secret: secret !== undefined },
    ...(ended > 0 && { sessions_ended: ended }),
  };
}

/** The stored secret, sealed: a change of it is a change of the item (versioned-change.ts). */
export const sealedSecretOf = async (sql: Sql, workspaceId: string) =>
  (await findOidcClient(sql, workspaceId))?.clientSecretSealed ?? null;
