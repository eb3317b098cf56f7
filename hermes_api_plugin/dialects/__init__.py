"""Pure writers that render turn events in a wire dialect (no aiohttp, no I/O)."""
