"""500 idle WebSocket connections to `/v1/responses` (WIRE.md §16): what each costs the gateway process.

An idle socket holds its upgrade request, aiohttp's protocol, frame reader and writer, the heartbeat's timer and one
handler task parked on the next message, plus the connection's own state (its Hermes headers and an empty set of kept
Responses); no task handles messages while none come (http/websocket.py `serve`), nothing is compressed (no deflate
context) and no buffer is held beyond aiohttp's read buffer. So the cost is of the same order as an idle SSE stream
(< 64 KiB): the bound asserted is 64 KiB a socket, the figure measured is printed.
"""

from __future__ import annotations

import asyncio
import resource
from typing import Any

import aiohttp

from tests.helpers import RESPONSES
from tests.live import LiveGateway
from tests.load.support import rss_mib, server_numbers

SOCKETS = 500
WARM = 20  # opened first: what the first sockets allocate once (imports, pools) is not counted per socket
BOUND_KIB = 64


async def _open(session: aiohttp.ClientSession, live: LiveGateway, n: int) -> list[aiohttp.ClientWebSocketResponse]:
    url = f"{live.url}{RESPONSES}"
    opened: list[aiohttp.ClientWebSocketResponse] = []
    for start in range(0, n, 50):  # in batches: the listen backlog and a 2-core machine
        opened += await asyncio.gather(
            *(session.ws_connect(url, headers=live.headers) for _ in range(start, min(n, start + 50)))
        )
    return opened


async def _drain(ws: aiohttp.ClientWebSocketResponse) -> None:
    """Read until closed: answers the server's pings, as any client's read loop does."""
    async for _ in ws:
        pass


async def _measure(live: LiveGateway) -> float:
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        warm = await _open(session, live, WARM)
        readers = [asyncio.ensure_future(_drain(ws)) for ws in warm]
        await asyncio.sleep(0.5)
        before = rss_mib(live.proc.pid)
        sockets = await _open(session, live, SOCKETS)
        readers += [asyncio.ensure_future(_drain(ws)) for ws in sockets]
        await asyncio.sleep(1.0)
        after = rss_mib(live.proc.pid)
        assert server_numbers(live)["streams"]["open"] == WARM + SOCKETS
        for ws in [*warm, *sockets]:
            await ws.close()
        await asyncio.gather(*readers)
    return (after - before) * 1024 / SOCKETS


def test_w_16_1_500_idle_sockets_cost_a_bounded_amount_each(gateway_factory: Any) -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert soft >= 2 * (SOCKETS + WARM) + 100, f"ulimit -n is {soft}: both ends of every socket live on this machine"
    live = gateway_factory()
    per_socket = asyncio.run(_measure(live))
    print(f"\nidle WebSocket: {per_socket:.1f} KiB of gateway RSS per socket ({SOCKETS} sockets)")
    assert per_socket < BOUND_KIB
