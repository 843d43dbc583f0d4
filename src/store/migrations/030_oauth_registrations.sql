-- Open client registration (RFC 7591) is bounded (issue 37): anyone may register, so a client that no
-- member has allowed expires 24 hours after it registered (its `expires_at`, cleared once a grant
-- names it), and an address keeps only so many such clients: `registered_from` is the address.
ALTER TABLE oauth_records ADD COLUMN registered_from TEXT;
CREATE INDEX oauth_records_registered_from ON oauth_records (registered_from, expires_at)
  WHERE registered_from IS NOT NULL;
-- Clients registered before, that no grant names: a day after they registered (the sweep deletes
-- those older at once).
UPDATE oauth_records SET expires_at = created_at + 86400000
  WHERE model = 'Client' AND expires_at IS NULL
    AND client_id NOT IN (SELECT client_id FROM oauth_grants WHERE revoked_at IS NULL);
