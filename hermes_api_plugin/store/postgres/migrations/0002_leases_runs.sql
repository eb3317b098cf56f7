-- Gateways sharing one store (issue 15): who owns what, for how long (as SQLite's 0005_leases_runs.sql).
-- A gateway process renews a lease under its boot id while it runs: a running admission, stored Response or
-- run whose owner holds no lease valid now (none, expired, or its process is gone) was left behind by a
-- gateway that died, and settles `unknown_execution` (WIRE.md §5.4).
CREATE TABLE leases (
    owner       TEXT PRIMARY KEY,   -- the boot id of a gateway process
    expires_at  DOUBLE PRECISION NOT NULL,  -- the owner's clock, renewed every lease_seconds / 3
    space       TEXT,               -- the process space of `pid` (kernel boot id + pid namespace), NULL: unknown
    pid         INTEGER,
    host        TEXT NOT NULL DEFAULT '',
    renewed_at  DOUBLE PRECISION NOT NULL
);

-- The gateway process that runs a stored Response until it settles.
ALTER TABLE responses ADD COLUMN owner TEXT;

-- Durable run records: what GET /v1/runs/{id} (+ /events, /stop) needs on a gateway that does not run the turn.
CREATE TABLE runs (
    turn_id     TEXT PRIMARY KEY,
    scope       TEXT NOT NULL,
    owner       TEXT NOT NULL,
    surface     TEXT NOT NULL,      -- chat | responses | runs | session_chat
    session_id  TEXT NOT NULL,
    model       TEXT,
    status      TEXT NOT NULL,      -- running, then the settled status
    created_at  DOUBLE PRECISION NOT NULL,
    settled_at  DOUBLE PRECISION
);

-- Which gateway host keeps a session when each host keeps its own sessions (the hermes runtime: state.db per
-- Hermes home): `host` is `<hostname>:<Hermes home>` (placement.py).
CREATE TABLE session_hosts (
    session_id  TEXT PRIMARY KEY,
    host        TEXT NOT NULL,
    updated_at  DOUBLE PRECISION NOT NULL
);

CREATE INDEX runs_running ON runs (owner) WHERE status = 'running';
CREATE INDEX runs_by_settled ON runs (settled_at);
CREATE INDEX responses_by_turn ON responses (turn_id);
DROP INDEX admissions_running;
CREATE INDEX admissions_running ON admissions (owner) WHERE state = 'running';
DROP INDEX responses_unsettled;
CREATE INDEX responses_unsettled ON responses (owner) WHERE status IN ('queued', 'in_progress');
