"""The statements of the plugin store (stored Responses, conversation names, session keys, session placement,
idempotency records, journals, leases, runs) that SQLite and PostgreSQL say alike, written once.

Templates with `{dead}` take the backend's test "`t.owner` is one of the JSON/array parameter `:dead`" (SQLite's
`json_each`, PostgreSQL's `ANY`), filled in once when the backend's module is imported.
"""

from __future__ import annotations

from .statement import insert, sql, upsert

RESPONSE_COLUMNS = (
    "id",
    "scope",
    "turn_id",
    "session_id",
    "previous_response_id",
    "conversation",
    "status",
    "snapshot",
    "input_items",
    "instructions",
    "messages",
    "render",
    "created_at",
    "accessed_at",
    "owner",
)
ITEM_COLUMNS = ("item_id", "scope", "response_id", "call_id", "item")
IDEMPOTENCY_COLUMNS = (
    "scope",
    "surface",
    "key",
    "identity",
    "target",
    "state",
    "turn_id",
    "reply",
    "owner",
    "created_at",
    "settled_at",
)
LEASE_COLUMNS = ("owner", "expires_at", "space", "pid", "host", "renewed_at")
RUN_COLUMNS = ("turn_id", "scope", "owner", "surface", "session_id", "model", "status", "created_at", "settled_at")

# A row (alias `t`) whose owner holds no lease valid at :now, or is one of :dead.
_OWNER_GONE = (
    "(t.owner IS NULL OR {dead} OR NOT EXISTS "
    "(SELECT 1 FROM leases l WHERE l.owner = t.owner AND l.expires_at >= :now))"
)

# -- session keys and conversation names ----------------------------------------------------------------
SESSION_FOR_KEY = sql("SELECT session_id FROM session_keys WHERE scope = ? AND key = ?")
BIND_SESSION_KEY = sql(
    "INSERT INTO session_keys (scope, key, session_id, updated_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (scope, key) DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at"
)
UNBIND_SESSION_KEYS = sql("DELETE FROM session_keys WHERE session_id = ?")
CONVERSATION_HEAD = sql("SELECT response_id FROM conversations WHERE scope = ? AND name = ?")
NAME_CONVERSATION = sql(
    "INSERT INTO conversations (scope, name, response_id, updated_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (scope, name) DO UPDATE SET response_id = excluded.response_id, updated_at = excluded.updated_at"
)
CONVERSATIONS_OF = sql("SELECT name FROM conversations WHERE scope = ? AND response_id = ? ORDER BY name")
DROP_CONVERSATIONS_OF = sql("DELETE FROM conversations WHERE scope = ? AND response_id = ?")

# -- session placement ----------------------------------------------------------------------------------
SESSION_HOST = sql("SELECT host FROM session_hosts WHERE session_id = ?")
SET_SESSION_HOST = sql(upsert("session_hosts", ("session_id", "host", "updated_at"), ("session_id",)))
UNPLACE_SESSION = sql("DELETE FROM session_hosts WHERE session_id = ?")

# -- stored Responses -----------------------------------------------------------------------------------
# An update keeps what the chain was built from (input, instructions, links) as first stored.
PUT_RESPONSE = sql(
    insert("responses", RESPONSE_COLUMNS) + " ON CONFLICT (id) DO UPDATE SET status = excluded.status, "
    "snapshot = excluded.snapshot, messages = excluded.messages, accessed_at = excluded.accessed_at"
)
COUNT_RESPONSES = sql("SELECT COUNT(*) AS n FROM responses")
# Read and mark accessed in one statement.
GET_RESPONSE = sql("UPDATE responses SET accessed_at = ? WHERE id = ? AND scope = ? RETURNING *")
# The response row first: of two deletions of one response, the second finds nothing and changes nothing.
DELETE_RESPONSE = sql("DELETE FROM responses WHERE id = ? AND scope = ? RETURNING turn_id")
CHAIN_MESSAGES = sql(
    "WITH RECURSIVE chain(id, prev, messages, depth) AS ("
    " SELECT id, previous_response_id, messages, 0 FROM responses WHERE id = ? AND scope = ?"
    " UNION ALL SELECT r.id, r.previous_response_id, r.messages, chain.depth + 1"
    " FROM responses r JOIN chain ON r.id = chain.prev WHERE r.scope = ?)"
    " SELECT messages FROM chain ORDER BY depth DESC"
)
FIND_ITEM = sql("SELECT item FROM response_items WHERE item_id = ? AND scope = ?")
UNSETTLED_RESPONSES = sql(f"SELECT * FROM responses AS t WHERE status IN ('queued', 'in_progress') AND {_OWNER_GONE}")

# -- idempotency records (the `admissions` table) -------------------------------------------------------
GET_IDEMPOTENCY_RECORD = sql("SELECT * FROM admissions WHERE scope = :scope AND surface = :surface AND key = :key")
INSERT_IDEMPOTENCY_RECORD = sql(insert("admissions", IDEMPOTENCY_COLUMNS))
REPLACE_IDEMPOTENCY_RECORD = sql(upsert("admissions", IDEMPOTENCY_COLUMNS, ("scope", "surface", "key")))
SETTLE_IDEMPOTENCY_RECORD = sql(
    "UPDATE admissions SET state = 'settled', settled_at = ? WHERE turn_id = ? AND state = 'running'"
)
# The key stays consumed: a retry answers admission_expired instead of running the turn again.
TOMBSTONE_IDEMPOTENCY_RECORD = sql("UPDATE admissions SET state = 'tombstone', settled_at = ? WHERE turn_id = ?")
IDEMPOTENCY_RECORD_FOR_TURN = sql("SELECT * FROM admissions WHERE turn_id = ? AND scope = ?")
MARK_UNKNOWN_IDEMPOTENCY_RECORDS = sql(
    "UPDATE admissions AS t SET state = 'unknown', settled_at = :now "
    f"WHERE state = 'running' AND {_OWNER_GONE} RETURNING turn_id"
)

# -- journals -------------------------------------------------------------------------------------------
# Writing a sequence number again replaces that event: a retried batch is harmless.
APPEND_JOURNAL = sql(
    "INSERT INTO journal_events (turn_id, seq, event) VALUES (?, ?, ?) "
    "ON CONFLICT (turn_id, seq) DO UPDATE SET event = excluded.event"
)
LOAD_JOURNAL = sql("SELECT event FROM journal_events WHERE turn_id = ? AND seq >= ? ORDER BY seq")
DROP_JOURNAL = sql("DELETE FROM journal_events WHERE turn_id = ?")

# -- leases ---------------------------------------------------------------------------------------------
RENEW_LEASE = sql(upsert("leases", LEASE_COLUMNS, ("owner",)))
RELEASE_LEASE = sql("DELETE FROM leases WHERE owner = ?")
GET_LEASE = sql("SELECT * FROM leases WHERE owner = ?")
ALL_LEASES = sql("SELECT * FROM leases ORDER BY owner")

# -- runs -----------------------------------------------------------------------------------------------
PUT_RUN = sql(upsert("runs", RUN_COLUMNS, ("turn_id",)))
SETTLE_RUN = sql("UPDATE runs SET status = ?, settled_at = ? WHERE turn_id = ? AND status = 'running'")
GET_RUN = sql("SELECT * FROM runs WHERE turn_id = ? AND scope = ?")
MARK_FAILED_RUNS = sql(
    f"UPDATE runs AS t SET status = 'failed', settled_at = :now WHERE status = 'running' AND {_OWNER_GONE} "
    "RETURNING turn_id"
)
OWNED_UNSETTLED = sql(
    "SELECT turn_id FROM admissions WHERE state = 'running' AND owner = :o UNION "
    "SELECT turn_id FROM runs WHERE status = 'running' AND owner = :o UNION "
    "SELECT turn_id FROM responses WHERE status IN ('queued', 'in_progress') AND owner = :o "
    "ORDER BY turn_id"
)
# Journals of runs settled before :before, unless an idempotency record or a stored Response still renders them.
PURGE_RUN_JOURNALS = sql(
    "DELETE FROM journal_events WHERE turn_id IN (SELECT r.turn_id FROM runs r "
    "WHERE r.status <> 'running' AND r.settled_at < :before "
    "AND NOT EXISTS (SELECT 1 FROM admissions a WHERE a.turn_id = r.turn_id) "
    "AND NOT EXISTS (SELECT 1 FROM responses s WHERE s.turn_id = r.turn_id))"
)
PURGE_RUNS = sql("DELETE FROM runs WHERE status <> 'running' AND settled_at < :before")

# -- schema migrations ----------------------------------------------------------------------------------
MIGRATIONS_APPLIED = sql("SELECT version, name FROM schema_migrations")
RECORD_MIGRATION = sql("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)")
