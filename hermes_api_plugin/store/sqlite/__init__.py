"""The SQLite backend: one file (or memory) holding the plugin store (`store.py`) and its session tables
(`sessions.py`), opened on one thread (`db.py`), its schema migrated from `migrations/` (`migrate.py`)."""
