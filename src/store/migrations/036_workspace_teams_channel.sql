-- Each workspace's own Teams channel (`teams: { channel }` in its workspace file, a `19:…@thread.tacv2`
-- conversation id); null: none.
ALTER TABLE workspaces ADD COLUMN teams_channel TEXT;
