"""Everything that runs against hermes-agent itself: `compat/` (the only package touching hermes-agent's
internals) and `bridge` (the plugin inside `hermes gateway`). Importing this package imports no hermes-agent
module."""
