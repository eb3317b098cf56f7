"""HTTP handlers: each admits or finds a turn and renders it through a dialect."""
