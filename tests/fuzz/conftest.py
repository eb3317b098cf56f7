"""One live reference gateway per fuzz module and store (SQLite, PostgreSQL: what is stored, and how a store refuses
a value, differs), on the millisecond fuzz script, with its canary planted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.live import SCRIPTS, start_gateway, write_home
from tests.pg import STORES, store_env

from .target import FuzzTarget


@pytest.fixture(scope="module", params=STORES)
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzTarget]:
    # No execution log (write_home adds one to the scripts it copies): megabyte inputs would fill it.
    with store_env(request) as env:
        home = write_home(
            tmp_path_factory.mktemp("fuzz_home"),
            env=env,
            script=None,
            config={"agent": {"script": str(SCRIPTS / "fuzz.yaml")}},
        )
        gateway = start_gateway(home)
        fuzz = FuzzTarget(gateway)
        try:
            fuzz.plant()
            yield fuzz
        finally:
            gateway.stop()
    print(f"\n{request.module.__name__} [{request.param}]: {fuzz.sent} requests")  # the cost, in the CI log (-s)
