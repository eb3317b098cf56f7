"""PostgreSQL migration 0003 (issue 20, defect 7): the free text a database stored before it — a response's
instructions, a message's reasoning, as plain `text` — reads back unchanged once the columns hold JSON string
literals (store/postgres/text.py). A real server (tests/pg.py)."""

from __future__ import annotations

from pathlib import Path

import psycopg

from hermes_api_plugin.store.postgres.db import PostgresDatabase
from hermes_api_plugin.store.postgres.store import PostgresStore
from tests.pg import PG_MIGRATIONS

# What a client could have sent before: quotes, a backslash, JSON-looking text, non-ASCII, a line break.
OLD_TEXT = 'plain "quoted" \\ text {"a": 1} é\n\t'


async def test_issue_20_defect_7_free_text_stored_before_migration_3_reads_back_unchanged(
    postgres_url: str, tmp_path: Path
) -> None:
    before = tmp_path / "before"
    before.mkdir()
    for name in ("0001_schema.sql", "0002_leases_runs.sql"):
        (before / name).write_text(PG_MIGRATIONS.joinpath(name).read_text(encoding="utf-8"), encoding="utf-8")
    old = PostgresDatabase(postgres_url, migrations_dir=before)
    await old.open()
    await old.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO responses (id, scope, turn_id, session_id, status, snapshot, input_items, instructions, "
            "messages, render, created_at, accessed_at) VALUES ('resp_old', 's', 'run_old', 'api-old', 'completed', "
            "'{}', '[]', %s, '[]', '{}', 1, 1)",
            (OLD_TEXT,),
        )
        conn.execute("INSERT INTO sessions (id, created_at, updated_at) VALUES ('old', 1, 1)")
        conn.execute(
            "INSERT INTO messages (session_id, role, content, reasoning, created_at) VALUES "
            '(\'old\', \'assistant\', \'[{"type":"text","text":"a"}]\', %s, 1), '
            '(\'old\', \'user\', \'[{"type":"text","text":"b"}]\', NULL, 1)',
            (OLD_TEXT,),
        )

    store = PostgresStore(postgres_url)
    await store.open()
    try:
        response = await store.get_response("s", "resp_old")
        assert response is not None and response.instructions == OLD_TEXT
        assert [m.reasoning for m in await store.sessions.load_session_messages("old")] == [OLD_TEXT, None]
    finally:
        await store.close()
