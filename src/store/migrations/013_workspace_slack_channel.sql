-- Each workspace's own Slack channel (`slack: { channel }` in its workspace file); null: none.
ALTER TABLE workspaces ADD COLUMN slack_channel TEXT;
