-- Idempotent admissions (WIRE.md §5): one row per (credential scope, surface, Idempotency-Key).
CREATE TABLE admissions (
    scope       TEXT NOT NULL,
    surface     TEXT NOT NULL,      -- chat | responses | runs | session_chat
    key         TEXT NOT NULL,
    identity    TEXT NOT NULL,      -- sha256 of the canonical identity fields
    target      TEXT NOT NULL,      -- the target session, compared separately
    state       TEXT NOT NULL,      -- running | settled | unknown | tombstone
    owner       TEXT,               -- boot id of the gateway process running it
    turn_id     TEXT NOT NULL,      -- run id: the journal a replay renders
    reply       TEXT NOT NULL,      -- what a replay needs to render the turn again (JSON)
    created_at  REAL NOT NULL,
    settled_at  REAL,
    PRIMARY KEY (scope, surface, key)
) WITHOUT ROWID;

CREATE INDEX admissions_by_turn ON admissions(turn_id);
