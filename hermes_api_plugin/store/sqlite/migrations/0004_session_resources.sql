-- Session resources (WIRE.md §7): titles, flags, token counters, lineage, compaction archive.
ALTER TABLE sessions ADD COLUMN source TEXT NOT NULL DEFAULT 'api_server';
ALTER TABLE sessions ADD COLUMN title TEXT;
ALTER TABLE sessions ADD COLUMN model TEXT;
ALTER TABLE sessions ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN ended_at REAL;
ALTER TABLE sessions ADD COLUMN parent_session_id TEXT;
ALTER TABLE sessions ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN compacted INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_by_activity ON sessions(updated_at);
