"""Several gateways on one store: leases, recovery, following other gateways' turns, session placement, background
work."""
