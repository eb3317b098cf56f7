"""Hostile JSON bodies on every POST (and PATCH) route of one live gateway: whole documents (deep nesting, garbage,
broken UTF-8, truncation) and every field of every body replaced by a value of another type — huge and non-finite
numbers, lone surrogates, megabyte strings, deep nesting — or repeated as a duplicate key.

Properties (tests/fuzz/target.py): no answer ≥ 500, every non-2xx in the §1.7 envelope with the JSON content type,
the gateway healthy afterwards with the canary session and response unchanged and no traceback in its log.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .strategies import field_bodies, fuzz_settings, hostile_documents
from .surfaces import SURFACES, Surface
from .target import FuzzTarget, http_request

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]


IDEMPOTENCY_KEYS = st.sampled_from([None, b"fuzz-key-1", b"fuzz-key-2"])


def test_hostile_documents_on_every_post_route(target: FuzzTarget) -> None:
    """W-1.7: whatever the body, a 4xx in the envelope or a served turn; never 500."""

    before = target.statuses.copy()

    @fuzz_settings(1000)
    @given(surface=st.sampled_from(list(SURFACES.values())), body=hostile_documents(), key=IDEMPOTENCY_KEYS)
    def run(surface: Surface, body: bytes, key: bytes | None) -> None:
        headers = [(b"Idempotency-Key", key)] if key else []
        target.send(http_request(surface.method, surface.path.encode(), body, headers))

    run()
    assert target.served_since(before) > 0
    target.check_intact()


@pytest.mark.parametrize("name", list(SURFACES))
def test_hostile_values_in_every_field_of_every_body(target: FuzzTarget, name: str) -> None:
    """W-1.7: each field of each body, at any depth, with a value of any type; never 500."""
    surface = SURFACES[name]
    before = target.statuses.copy()

    @fuzz_settings(300 if name in ("chat", "responses", "runs") else 150)
    @given(body=field_bodies(surface), key=IDEMPOTENCY_KEYS)
    def run(body: bytes, key: bytes | None) -> None:
        headers = [(b"Idempotency-Key", key)] if key else []
        target.send(http_request(surface.method, surface.path.encode(), body, headers))

    run()
    assert target.served_since(before) > 0  # not everything refused: the hostile values reached turns and the store
    target.check_intact()
