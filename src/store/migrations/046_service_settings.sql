-- What the running service says about itself, for the command line on the same storage: `public_url`,
-- the address people open (PUBLIC_URL, or the port it listens on), written at every start so that
-- `approvals users invite` prints links to the service, not to a port the command guessed.
CREATE TABLE service_settings (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
