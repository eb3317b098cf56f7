-- Feed messages too long for a NOTIFY payload (under 8000 bytes): a client's answer forwarded to the gateway that
-- runs its turn may carry a 50 KB tool output or answer (WIRE.md §15.4, W-15.4). The sender stores it here and
-- notifies only its id, in one transaction; the addressee takes it (DELETE … RETURNING). A row nobody took — its
-- addressee died — is dropped by the next long message once it is stale (store/postgres/feed.py). PostgreSQL only:
-- SQLite is never shared by gateways at once, so it has no feed.
CREATE TABLE feed_messages (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    body        TEXT NOT NULL,          -- the message as the cluster wrote it (JSON: control characters escaped)
    created_at  DOUBLE PRECISION NOT NULL DEFAULT EXTRACT(EPOCH FROM clock_timestamp())  -- the database's clock
);

CREATE INDEX feed_messages_by_created ON feed_messages (created_at);
