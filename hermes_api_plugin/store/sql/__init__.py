"""SQL shared by the two backends: statements written once (`statements.py`, `sessions.py`) in one placeholder
style and adapted for the other when defined (`statement.py`), and the numbered migration files both load
(`migrations.py`). What only one backend can say (its upsert of a rowid, `RETURNING` it relies on alone, locks,
NOTIFY, `json_each` or `ANY(…::text[])`) stays in that backend's folder."""
