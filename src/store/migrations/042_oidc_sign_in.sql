-- Sign-in with the workspace's identity provider (issue 41): one OpenID Connect client per workspace.
-- `client_secret_sealed`: the client secret sealed with SECRETS_KEY (services/secrets.ts), NULL for a
-- public client (PKCE only). `roles`: JSON of claim value -> role. `just_in_time`, `required`: 0/1.
CREATE TABLE oidc_clients (
  workspace_id TEXT PRIMARY KEY REFERENCES workspaces (id),
  display_name TEXT NOT NULL,
  issuer TEXT NOT NULL,
  client_id TEXT NOT NULL,
  client_secret_sealed TEXT,
  roles_claim TEXT,
  roles TEXT NOT NULL,
  just_in_time INTEGER NOT NULL DEFAULT 0,
  required INTEGER NOT NULL DEFAULT 0,
  updated_at BIGINT NOT NULL
);
