-- The whole schema of the SQLite migrations 0001-0004, in PostgreSQL's types. Times are epoch seconds
-- (double precision) as the Store protocol exchanges them. JSON stays `text`: a stored Response object
-- is rendered again in the key order it was written in (jsonb would reorder it), and journal events
-- replay byte for byte.

-- Sessions and their messages: the server-side history behind X-Hermes-Session-Id (the plugin's own
-- session tables; the hermes runtime keeps its sessions in Hermes' SessionDB instead).
CREATE TABLE sessions (
    id                TEXT PRIMARY KEY,
    source            TEXT NOT NULL DEFAULT 'api_server',
    title             TEXT,
    model             TEXT,
    pinned            BOOLEAN NOT NULL DEFAULT FALSE,
    archived          BOOLEAN NOT NULL DEFAULT FALSE,
    created_at        DOUBLE PRECISION NOT NULL,
    updated_at        DOUBLE PRECISION NOT NULL,
    ended_at          DOUBLE PRECISION,
    parent_session_id TEXT,
    input_tokens      BIGINT NOT NULL DEFAULT 0,
    output_tokens     BIGINT NOT NULL DEFAULT 0
);

CREATE INDEX sessions_by_activity ON sessions (updated_at);

CREATE TABLE messages (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- append order
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    role        TEXT NOT NULL,
    content     TEXT NOT NULL,      -- JSON list of content parts
    reasoning   TEXT,
    extra       TEXT,               -- JSON: tool_calls / tool_call_id / {"summary": true}
    compacted   BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  DOUBLE PRECISION NOT NULL
);

CREATE INDEX messages_by_session ON messages (session_id, id);

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
    created_at           DOUBLE PRECISION NOT NULL,
    accessed_at          DOUBLE PRECISION NOT NULL
);

CREATE INDEX responses_by_access ON responses (accessed_at);
CREATE INDEX responses_unsettled ON responses (status) WHERE status IN ('queued', 'in_progress');

CREATE TABLE response_items (
    item_id     TEXT PRIMARY KEY,
    scope       TEXT NOT NULL,
    response_id TEXT NOT NULL REFERENCES responses (id) ON DELETE CASCADE,
    call_id     TEXT,
    item        TEXT NOT NULL,
    written     BIGSERIAL NOT NULL   -- write order (SQLite's rowid): the latest output of a call wins
);

CREATE INDEX response_items_by_call ON response_items (scope, call_id);
CREATE INDEX response_items_by_response ON response_items (response_id);

CREATE TABLE conversations (
    scope       TEXT NOT NULL,
    name        TEXT NOT NULL,
    response_id TEXT NOT NULL,
    updated_at  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (scope, name)
);

CREATE INDEX conversations_by_response ON conversations (response_id);

CREATE TABLE session_keys (
    scope       TEXT NOT NULL,
    key         TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    updated_at  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (scope, key)
);

CREATE INDEX session_keys_by_session ON session_keys (session_id);

CREATE TABLE journal_events (
    turn_id TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    event   TEXT NOT NULL,
    PRIMARY KEY (turn_id, seq)
);

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
    created_at  DOUBLE PRECISION NOT NULL,
    settled_at  DOUBLE PRECISION,
    PRIMARY KEY (scope, surface, key)
);

CREATE INDEX admissions_by_turn ON admissions (turn_id);
CREATE INDEX admissions_running ON admissions (state) WHERE state = 'running';
