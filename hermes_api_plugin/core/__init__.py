"""The values every layer shares: turn events, content, transcripts, errors, redaction, numbers. No aiohttp."""
