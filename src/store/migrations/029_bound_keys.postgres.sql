-- Issue 37: nobody chooses who may not approve.
-- A key may be bound to an agent identity (its holds carry it, whatever the caller names) and to the
-- member who owns that agent (who therefore never approves its holds). Null: not bound.
ALTER TABLE api_keys ADD COLUMN agent_id TEXT;
ALTER TABLE api_keys ADD COLUMN owner_member_id TEXT REFERENCES members (id);
-- The member a hold's requester acts for (a bound key's owner, or the member who allowed the OAuth
-- client): that member may not approve it. Null: nobody's.
ALTER TABLE holds ADD COLUMN requested_for TEXT;
-- `required`: holds from keys not bound to an agent are refused.
ALTER TABLE workspaces ADD COLUMN key_binding TEXT NOT NULL DEFAULT 'optional'
  CHECK (key_binding IN ('optional', 'required'));
