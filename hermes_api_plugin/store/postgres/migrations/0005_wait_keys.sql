-- What a suspended turn can be answered by, while it waits (WIRE.md §15.1, W-15.4): with several gateways the answer
-- may land on one that does not run the turn, and finds it here — by its session, a chat conversation's key, a client
-- tool call id, a Responses approval request id or the Response it ended. The gateway whose delivery paused at the
-- request writes the keys (after the journal holding the request is committed); the answer drops them before it is
-- applied, and the turn's settlement drops what is left. PostgreSQL only: SQLite is never shared by gateways at once,
-- so a suspended turn is always found in the registry of the one process that runs it.
CREATE TABLE wait_keys (
    scope   TEXT NOT NULL,  -- the credential scope that admitted the turn: an answer is looked up in its own only
    key     TEXT NOT NULL,  -- `<kind>:<value>` (cluster/waits.py)
    run_id  TEXT NOT NULL,  -- the run (runs.turn_id) that waits
    PRIMARY KEY (scope, key, run_id)
);

CREATE INDEX wait_keys_by_run ON wait_keys (run_id);
