"""Benchmarks of hermes-api-plugin (not part of the test command): `python -m bench`."""
