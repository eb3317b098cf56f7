-- Stored responses (Responses API), their items, conversation names, session-key bindings and
-- durable turn journals (written in batches).
CREATE TABLE responses (
    id                   TEXT PRIMARY KEY,
    scope                TEXT NOT NULL,
    turn_id              TEXT NOT NULL,
    session_id           TEXT NOT NULL,
    previous_response_id TEXT,
    conversation         TEXT,
    status               TEXT NOT NULL,
    snapshot             TEXT NOT NULL,   -- the latest Response object (JSON)
    input_items          TEXT NOT NULL,   -- the request's input items with ids (JSON list)
    instructions         TEXT,            -- effective instructions (inherited along the chain)
    messages             TEXT NOT NULL,   -- this turn's transcript (JSON list of messages)
    render               TEXT NOT NULL,   -- how the journal renders again: {"queued","commentary"}
    created_at           REAL NOT NULL,
    accessed_at          REAL NOT NULL
);

CREATE INDEX responses_by_access ON responses(accessed_at);

CREATE TABLE response_items (
    item_id     TEXT PRIMARY KEY,
    scope       TEXT NOT NULL,
    response_id TEXT NOT NULL REFERENCES responses(id) ON DELETE CASCADE,
    call_id     TEXT,
    item        TEXT NOT NULL
);

CREATE INDEX response_items_by_call ON response_items(scope, call_id);
CREATE INDEX response_items_by_response ON response_items(response_id);

CREATE TABLE conversations (
    scope       TEXT NOT NULL,
    name        TEXT NOT NULL,
    response_id TEXT NOT NULL,
    updated_at  REAL NOT NULL,
    PRIMARY KEY (scope, name)
);

CREATE INDEX conversations_by_response ON conversations(response_id);

CREATE TABLE session_keys (
    scope       TEXT NOT NULL,
    key         TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    updated_at  REAL NOT NULL,
    PRIMARY KEY (scope, key)
);

CREATE TABLE journal_events (
    turn_id TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    event   TEXT NOT NULL,
    PRIMARY KEY (turn_id, seq)
) WITHOUT ROWID;

-- Tool calls and tool results in session history.
ALTER TABLE messages ADD COLUMN extra TEXT
