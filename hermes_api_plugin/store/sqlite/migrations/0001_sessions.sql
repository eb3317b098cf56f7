-- Sessions and their messages: the server-side history behind X-Hermes-Session-Id.
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    created_at  REAL NOT NULL,
    updated_at  REAL NOT NULL
);

CREATE TABLE messages (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    role        TEXT NOT NULL,
    content     TEXT NOT NULL,      -- JSON list of content parts
    reasoning   TEXT,
    created_at  REAL NOT NULL
);

CREATE INDEX messages_by_session ON messages(session_id, id);
