"""The PostgreSQL backend (the `postgres` extra): the plugin store several gateways share (`store.py`), its session
tables (`sessions.py`), the pool (`db.py`), LISTEN/NOTIFY between gateways (`feed.py`), free text as JSON (`text.py`)
and the schema migrated from `migrations/` (`migrate.py`). Nothing here is imported unless a store URL is set."""
