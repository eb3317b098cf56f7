"""20 clients that never read a multi-megabyte stream (issue 12): bounded memory, and slots that do not wait for them.

What happens to such a client, found out here: `SseStream` writes through aiohttp's `StreamResponse.write`, which
awaits the transport's drain whenever more than 64 KiB went out unflushed, and `send` writes a batch in 64 KiB
pieces — so a client that reads nothing parks its own handler on the drain with at most about 128 KiB in its
transport buffer. Its turn is not held back: the agent's events go to the turn's journal, not to the socket, so
the turn runs to its end, settles and frees its slot while the client still stalls. The journal (the turn's output,
once, shared by every view of the turn) stays readable in the registry for an hour (runs replay it, WIRE.md §6);
that is the memory a stalled client leaves, and it does not depend on whether the client reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes_api_plugin.http.sse import WRITE_BYTES
from tests.helpers import CHAT, live_request, wait_for
from tests.load.support import (
    RssSampler,
    close_abruptly,
    no_turns,
    rss_mib,
    server_numbers,
    stalled_client,
    wait_until_idle,
    write_big_text_script,
)

CLIENTS = 20
MIB = 4


def chat(text: str, stream: bool = False) -> dict[str, Any]:
    return {"model": "hermes-agent", "stream": stream, "messages": [{"role": "user", "content": text}]}


@pytest.mark.slow
def test_20_clients_stalled_on_4_mib_streams_keep_rss_bounded_and_free_their_slots(
    tmp_path: Path, gateway_factory: Any
) -> None:
    """20 chat streams of 4 MiB of answer text each (80 MiB in all), their clients reading nothing, at a cap of 20.

    - The turns settle while their clients stall (no turn, no slot left) and all 20 handlers are still parked on
      their streams; a new request is admitted at the cap.
    - What the stalled clients hold, counted by the server (`streams.buffered_bytes`): at most two 64 KiB pieces a
      transport — `SseStream.send` awaits the drain. Measured: 1.7–1.8 MB for the 20 (written whole, a batch would
      leave megabytes in each).
    - Stalled RSS ≤ baseline + 2 × the text + 48 MiB: the journals hold the text once (ASCII strings, one byte a
      character, plus their event objects); the rest is what the allocator keeps after the peak, which varies from
      run to run and machine to machine. Measured: 44 → 142–162 MiB here, 207 on a CI machine (+98 to +163 for
      80 MiB of text). Before settled turns dropped their runtime's state (AgentTurn.release) it was 326 MiB: every
      stalled client kept its turn's final answer a second time.
    - Peak RSS ≤ baseline + 6 × the text + 64 MiB: at its end a turn briefly holds its answer about four times (the
      journal, the runtime's final text, the transcript fold, the session message serialised for SQLite), and the
      20 turns end within the same second. Measured peak: 382 MiB.
    - When the clients go, every handler ends (no open stream within 10 s) and RSS does not grow: the journals stay
      readable as runs for an hour whatever the clients did. Measured: 142 MiB.
    """
    script = tmp_path / "big.yaml"
    chars = write_big_text_script(script, MIB)
    live = gateway_factory(
        script=None, config={"agent": {"script": str(script)}, "api_server": {"max_concurrent_runs": CLIENTS}}
    )
    pid = live.proc.pid
    assert live_request(live, "POST", CHAT, chat("small")).status == 200
    baseline = rss_mib(pid)
    text_mib = CLIENTS * chars / 2**20
    with RssSampler(pid) as sampler:
        clients = [stalled_client(live, CHAT, chat(f"big {n}", stream=True)) for n in range(CLIENTS)]
        try:
            # Every client's stream is open first (its head written, its turn admitted): before that, "no turn" would
            # also hold for turns not admitted yet (CI once polled that early and saw 0 streams).
            wait_for(
                lambda: server_numbers(live),
                30,
                until=lambda n: n["streams"]["open"] == CLIENTS,
                interval=0.1,
                what=f"{CLIENTS} open streams",
            )
            numbers = wait_for(lambda: server_numbers(live), 60, until=no_turns, interval=0.2, what="turns settling")
            assert numbers["streams"]["open"] == CLIENTS, numbers
            buffered = numbers["streams"]["buffered_bytes"]
            assert buffered <= CLIENTS * 2 * WRITE_BYTES, f"{buffered} bytes wait in the stalled transports"
            assert live_request(live, "POST", CHAT, chat("small")).status == 200, "admitted at the cap"
            bound = baseline + 2 * text_mib + 48
            stalled = wait_for(lambda: rss_mib(pid), 10, until=lambda rss: rss <= bound, what=f"RSS ≤ {bound:.0f} MiB")
            assert server_numbers(live)["streams"]["open"] == CLIENTS, "the clients still stall"
        finally:
            for sock in clients:
                close_abruptly(sock, reset=False)
        wait_until_idle(live, timeout=10)
        after = rss_mib(pid)
    print(
        f"\n{CLIENTS} stalled readers of {MIB} MiB: RSS {baseline:.0f} -> stalled {stalled:.0f}, "
        f"peak {sampler.peak:.0f}, after {after:.0f} MiB"
    )
    assert sampler.peak <= baseline + 6 * text_mib + 64, sampler.peak
    assert after <= stalled + 8, (stalled, after)
    assert live_request(live, "POST", CHAT, chat("small")).status == 200
