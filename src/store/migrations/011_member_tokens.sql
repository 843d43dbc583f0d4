-- Removing a member deletes their sign-in links, decision links and embed tokens: by member, from
-- tables shared by every workspace, so each needs an index on member_id.
CREATE INDEX login_tokens_by_member ON login_tokens (member_id);
CREATE INDEX decision_tokens_by_member ON decision_tokens (member_id);
CREATE INDEX embed_tokens_by_member ON embed_tokens (member_id);
