"""The one path that creates work: submit, idempotency, conversation resolution and chat continuity."""
