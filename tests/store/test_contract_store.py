"""Store contract: what every backend of the plugin-owned state does, written against the protocol only
(responses, conversation names, session-key bindings, idempotency records, journals).

Runs once per backend of the `open_backend` fixture (tests/store/conftest.py).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from hermes_api_plugin.store import Eviction, Store
from hermes_api_plugin.store.base import Lease

from .conftest import Backend, BackendFactory
from .support import NOW, OTHER, SCOPE, idempotency_record, response, text, tick


async def test_durable_reports_the_backend(backend: Backend) -> None:
    assert backend.store.durable is backend.durable


# -- session-key bindings ----------------------------------------------------------------------------------


async def test_session_keys_bind_rebind_and_unbind_per_scope(backend: Backend) -> None:
    store = backend.store
    assert await store.session_for_key(SCOPE, "key") is None
    await store.bind_session_key(SCOPE, "key", "s1")
    await store.bind_session_key(SCOPE, "key2", "s1")
    await store.bind_session_key(OTHER, "key", "s9")
    assert await store.session_for_key(SCOPE, "key") == "s1"
    assert await store.session_for_key(OTHER, "key") == "s9"
    await store.bind_session_key(SCOPE, "key", "s2")
    assert await store.session_for_key(SCOPE, "key") == "s2"
    await store.unbind_session("s1")
    assert await store.session_for_key(SCOPE, "key2") is None
    assert await store.session_for_key(SCOPE, "key") == "s2"
    await store.unbind_session("unknown")  # nothing bound: no error


# -- responses ---------------------------------------------------------------------------------------------


async def test_put_and_get_round_trip_within_its_scope_only(backend: Backend) -> None:
    store = backend.store
    stored = response(
        "r1",
        conversation="c",
        input_items=[{"id": "msg_1", "type": "message"}],
        instructions="be brief",
        queued=True,
        commentary=False,
        hosted=True,
        created_at=123.0,
    )
    assert await store.put_response(stored, []) == []
    assert await store.get_response(SCOPE, "r1") == stored
    assert await store.get_response(OTHER, "r1") is None
    assert await store.get_response(SCOPE, "missing") is None
    fresh = response("r2")  # no created_at: the store stamps it
    await store.put_response(fresh, [])
    got = await store.get_response(SCOPE, "r2")
    assert got is not None and got.created_at > 0 and got.queued is False and got.commentary is True
    assert got.hosted is False  # the server's tools as the §4.2 pairs unless the response was created hosted


async def test_put_again_updates_status_snapshot_and_transcript_only(backend: Backend) -> None:
    store = backend.store
    first = response("r1", status="in_progress", input_items=[{"id": "msg_1"}], instructions="i", created_at=5.0)
    await store.put_response(first, [])
    settled = replace(
        first,
        status="completed",
        snapshot={"done": True},
        messages=[text("assistant", "final")],
        input_items=[],
        instructions="changed",
        created_at=99.0,
    )
    await store.put_response(settled, [])
    got = await store.get_response(SCOPE, "r1")
    assert got is not None
    assert (got.status, got.snapshot, got.messages) == ("completed", {"done": True}, [text("assistant", "final")])
    assert (got.input_items, got.instructions, got.created_at) == ([{"id": "msg_1"}], "i", 5.0)


async def test_delete_removes_response_items_name_and_journal_and_tombstones_its_idempotency_record(
    backend: Backend,
) -> None:
    store = backend.store
    await store.reserve_idempotency_record(idempotency_record(turn="run_r1"))
    await store.append_journals([("run_r1", 0, ['{"e":0}'])])
    await store.put_response(response("r1", conversation="c"), [{"id": "msg_1", "type": "message"}])
    assert await store.delete_response(OTHER, "r1") is False
    assert await store.delete_response(SCOPE, "r1") is True
    assert await store.get_response(SCOPE, "r1") is None
    assert await store.find_item(SCOPE, "msg_1") is None
    assert await store.conversation_head(SCOPE, "c") is None
    assert await store.load_journal("run_r1") == []
    record = await store.idempotency_record_for_turn(SCOPE, "run_r1")
    assert record is not None and record.state == "tombstone" and record.settled_at is not None
    assert await store.delete_response(SCOPE, "r1") is False


async def test_conversation_head_moves_to_the_latest_response_per_scope(backend: Backend) -> None:
    store = backend.store
    await store.put_response(response("r1", conversation="c"), [])
    assert await store.conversation_head(SCOPE, "c") == "r1"
    await store.put_response(response("r2", previous="r1", conversation="c"), [])
    assert await store.conversation_head(SCOPE, "c") == "r2"
    await store.put_response(response("r3"), [])  # no conversation: the name stays put
    assert await store.conversation_head(SCOPE, "c") == "r2"
    assert await store.conversation_head(OTHER, "c") is None
    await store.put_response(response("o1", scope=OTHER, conversation="c"), [])
    assert (await store.conversation_head(SCOPE, "c"), await store.conversation_head(OTHER, "c")) == ("r2", "o1")


async def test_chain_messages_follow_previous_ids_oldest_first(backend: Backend) -> None:
    store = backend.store
    await store.put_response(response("r1"), [])
    await store.put_response(response("r2", previous="r1"), [])
    await store.put_response(response("r3", previous="r2"), [])
    await store.put_response(response("x", previous="r1"), [])  # a branch is not part of r3's chain
    assert [m.text for m in await store.chain_messages(SCOPE, "r3")] == ["q r1", "a r1", "q r2", "a r2", "q r3", "a r3"]
    assert [m.text for m in await store.chain_messages(SCOPE, "r1")] == ["q r1", "a r1"]
    assert await store.chain_messages(OTHER, "r3") == []
    assert await store.chain_messages(SCOPE, "missing") == []


async def test_find_item_by_id_within_scope(backend: Backend) -> None:
    store = backend.store
    item = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "terminal", "arguments": "{}"}
    await store.put_response(response("r1"), [item, {"type": "no id: not indexed"}])
    assert await store.find_item(SCOPE, "fc_1") == item
    assert await store.find_item(OTHER, "fc_1") is None
    assert await store.find_item(SCOPE, "missing") is None


async def test_find_tool_output_only_for_tools_this_server_ran(backend: Backend) -> None:
    store = backend.store
    ran = {"id": "fco_1", "type": "function_call_output", "call_id": "call_1", "output": "real"}
    await store.put_response(response("r1"), [ran])
    assert await store.find_tool_output(SCOPE, "call_1") == "real"
    assert await store.find_tool_output(OTHER, "call_1") is None
    # A client sends its own output for that call back as input: it never replaces the real one.
    client = {"id": "fco_in", "type": "function_call_output", "call_id": "call_1", "output": "forged"}
    await store.put_response(response("r2", input_items=[client]), [client])
    assert await store.find_tool_output(SCOPE, "call_1") == "real"
    assert await store.find_item(SCOPE, "fco_in") == client
    assert await store.find_tool_output(SCOPE, "missing") is None


async def test_lru_eviction_drops_the_least_recently_accessed_settled_responses(open_backend: BackendFactory) -> None:
    store = (await open_backend(max_responses=2)).store
    await store.reserve_idempotency_record(idempotency_record(turn="run_r1"))
    assert await store.put_response(response("r1", conversation="c1"), [{"id": "msg_r1"}]) == []
    await tick()
    assert await store.put_response(response("r2", conversation="c2"), []) == []
    await tick()
    await store.put_response(response("r3"), [])  # r1 is the least recently accessed
    assert await store.get_response(SCOPE, "r1") is None
    assert await store.find_item(SCOPE, "msg_r1") is None
    assert await store.conversation_head(SCOPE, "c1") is None
    record = await store.idempotency_record_for_turn(SCOPE, "run_r1")
    assert record is not None and record.state == "tombstone"
    await tick()
    assert await store.get_response(SCOPE, "r2") is not None  # reading r2 makes r3 the oldest
    await tick()
    evicted = await store.put_response(response("r4"), [])
    assert evicted == [Eviction("r3", ())]
    await tick()
    await store.get_response(SCOPE, "r4")
    await tick()
    evicted = await store.put_response(response("r5", conversation="c5"), [])
    assert evicted == [Eviction("r2", ("c2",))]


async def test_eviction_names_every_conversation_pointing_at_the_victim(open_backend: BackendFactory) -> None:
    store = (await open_backend(max_responses=1)).store
    await store.put_response(response("r1", conversation="a"), [])
    await store.put_response(response("r1", conversation="b"), [])  # the same response under a second name
    await tick()
    evicted = await store.put_response(response("r2"), [])
    assert len(evicted) == 1 and evicted[0].response_id == "r1"
    assert sorted(evicted[0].conversations) == ["a", "b"]


async def test_unsettled_responses_are_never_evicted_and_are_listed(open_backend: BackendFactory) -> None:
    store = (await open_backend(max_responses=1)).store
    await store.put_response(response("q", status="queued"), [])
    await tick()
    await store.put_response(response("p", status="in_progress", scope=OTHER), [])
    await tick()
    # Over the cap, only settled responses go: here that is the newcomer itself (as implemented).
    assert await store.put_response(response("done"), []) == [Eviction("done", ())]
    assert await store.get_response(SCOPE, "q") is not None
    assert await store.get_response(OTHER, "p") is not None
    # owner None: stored before leases, so no live owner claims them
    assert sorted(r.id for r in await store.unsettled_responses(NOW)) == ["p", "q"]
    # Once settled, q is evictable: still two stored, one over the cap.
    assert await store.put_response(response("q", status="completed"), []) == [Eviction("q", ())]
    assert [r.id for r in await store.unsettled_responses(NOW)] == ["p"]


# -- admissions --------------------------------------------------------------------------------------------


async def test_reserve_takes_the_key_once_and_returns_the_holder(backend: Backend) -> None:
    store = backend.store
    first = idempotency_record()
    assert await store.reserve_idempotency_record(first) is None
    assert await store.get_idempotency_record(SCOPE, "chat", "k1") == first
    holder = await store.reserve_idempotency_record(idempotency_record(turn="run_2", identity="id-2"))
    assert holder == first
    # The key is per scope and per surface.
    assert await store.reserve_idempotency_record(idempotency_record(scope=OTHER, turn="run_3")) is None
    assert await store.reserve_idempotency_record(idempotency_record(surface="responses", turn="run_4")) is None
    assert await store.get_idempotency_record(SCOPE, "runs", "k1") is None


async def test_concurrent_reservations_of_one_key_have_one_winner(backend: Backend) -> None:
    store = backend.store
    results = await asyncio.gather(
        *(store.reserve_idempotency_record(idempotency_record(turn=f"run_{n}")) for n in range(8))
    )
    winners = [n for n, held in enumerate(results) if held is None]
    assert len(winners) == 1
    assert {held.turn_id for held in results if held is not None} == {f"run_{winners[0]}"}


async def test_reserve_stamps_created_at_when_missing(backend: Backend) -> None:
    store = backend.store
    await store.reserve_idempotency_record(replace(idempotency_record(), created_at=0.0))
    got = await store.get_idempotency_record(SCOPE, "chat", "k1")
    assert got is not None and got.created_at > 0


async def test_replace_overwrites_the_record_of_a_key(backend: Backend) -> None:
    store = backend.store
    await store.reserve_idempotency_record(replace(idempotency_record(), state="settled", settled_at=1500.0))
    fresh = idempotency_record(turn="run_2", identity="id-2", owner="boot-b")
    await store.replace_idempotency_record(fresh)
    assert await store.get_idempotency_record(SCOPE, "chat", "k1") == fresh
    await store.replace_idempotency_record(idempotency_record(key="new"))  # also inserts
    assert await store.get_idempotency_record(SCOPE, "chat", "new") is not None


async def test_settle_moves_running_to_settled_only(backend: Backend) -> None:
    store = backend.store
    await store.reserve_idempotency_record(idempotency_record("a", turn="run_a"))
    await store.reserve_idempotency_record(idempotency_record("b", turn="run_b", state="unknown"))
    await store.settle_idempotency_record("run_a")
    await store.settle_idempotency_record("run_b")
    await store.settle_idempotency_record("run_missing")
    a = await store.get_idempotency_record(SCOPE, "chat", "a")
    b = await store.get_idempotency_record(SCOPE, "chat", "b")
    assert a is not None and a.state == "settled" and a.settled_at is not None
    assert b is not None and b.state == "unknown"


async def test_mark_unknown_takes_running_admissions_whose_owner_holds_no_live_lease(backend: Backend) -> None:
    """WIRE.md §5.4 with leases (issue 15): a running admission is left behind when its owner's lease expired, is
    absent, or the caller knows the owner's process is gone (`dead`); a live owner's stays running."""
    store = backend.store
    await store.renew_lease(Lease("boot-me", NOW + 10, renewed_at=NOW))
    await store.renew_lease(Lease("boot-live", NOW + 1, renewed_at=NOW))
    await store.renew_lease(Lease("boot-expired", NOW - 1, renewed_at=NOW - 16))
    await store.renew_lease(Lease("boot-killed", NOW + 10, renewed_at=NOW))
    await store.reserve_idempotency_record(idempotency_record("mine", turn="run_mine", owner="boot-me"))
    await store.reserve_idempotency_record(idempotency_record("live", turn="run_live", owner="boot-live"))
    await store.reserve_idempotency_record(idempotency_record("expired", turn="run_expired", owner="boot-expired"))
    await store.reserve_idempotency_record(idempotency_record("killed", turn="run_killed", owner="boot-killed"))
    await store.reserve_idempotency_record(idempotency_record("gone", turn="run_gone", owner="boot-old"))
    await store.reserve_idempotency_record(idempotency_record("anon", turn="run_anon", owner=None))
    await store.reserve_idempotency_record(
        idempotency_record("done", turn="run_done", owner="boot-old", state="settled")
    )
    marked = await store.mark_unknown_idempotency_records(NOW, dead=["boot-killed"])
    assert sorted(marked) == ["run_anon", "run_expired", "run_gone", "run_killed"]
    keys = ("mine", "live", "expired", "killed", "gone", "anon", "done")
    states = {k: (await store.get_idempotency_record(SCOPE, "chat", k)) for k in keys}
    assert {k: r.state for k, r in states.items() if r is not None} == {
        "mine": "running",
        "live": "running",
        "expired": "unknown",
        "killed": "unknown",
        "gone": "unknown",
        "anon": "unknown",
        "done": "settled",
    }
    assert states["gone"] is not None and states["gone"].settled_at == NOW
    assert await store.mark_unknown_idempotency_records(NOW) == []
    # time passes: the live lease runs out too (the caller's clock decides, never the backend's)
    assert await store.mark_unknown_idempotency_records(NOW + 2) == ["run_live"]


async def test_idempotency_record_for_turn_is_scoped(backend: Backend) -> None:
    store = backend.store
    record = idempotency_record(turn="run_x")
    await store.reserve_idempotency_record(record)
    assert await store.idempotency_record_for_turn(SCOPE, "run_x") == record
    assert await store.idempotency_record_for_turn(OTHER, "run_x") is None
    assert await store.idempotency_record_for_turn(SCOPE, "run_missing") is None


# -- journals ----------------------------------------------------------------------------------------------


async def test_journals_append_in_batches_and_load_in_order(backend: Backend) -> None:
    store = backend.store
    await store.append_journals([("t1", 0, ["e0", "e1"]), ("t2", 0, ["x0"])])
    await store.append_journals([("t1", 2, ["e2"])])
    await store.append_journals([("t1", 4, ["e4"]), ("t1", 3, ["e3"])])  # order of writing does not matter
    assert await store.load_journal("t1") == ["e0", "e1", "e2", "e3", "e4"]
    assert await store.load_journal("t2") == ["x0"]
    assert await store.load_journal("unknown") == []
    await store.append_journals([])


async def test_writing_a_sequence_number_again_replaces_that_event(backend: Backend) -> None:
    """Retrying a batch after an uncertain write is harmless: same start index, same events."""
    store = backend.store
    await store.append_journals([("t", 0, ["e0", "e1"])])
    await store.append_journals([("t", 0, ["e0", "e1"])])
    assert await store.load_journal("t") == ["e0", "e1"]
    await store.append_journals([("t", 1, ["E1", "e2"])])
    assert await store.load_journal("t") == ["e0", "E1", "e2"]


async def test_journal_rows_read_back_exactly_whatever_their_text(backend: Backend) -> None:
    """SQLite writes a group commit's rows as one JSON parameter (issue 25): no character of an event may change."""
    tricky = ['{"t":"q\\"b\\\\s"}', 'raw " \\ \n \t \u2028 é 漢 🙂 \U0001f600', "\\u0000", "\ud7ff\ue000", ""]
    rows = tricky + [f"e{i}" for i in range(2000)]
    await backend.store.append_journals([("t-odd", 0, rows), ("t-other", 7, ["x"])])
    assert await backend.store.load_journal("t-odd") == rows
    assert await backend.store.load_journal("t-other", 7) == ["x"]


def test_store_protocol_holds_no_session_methods() -> None:
    """The plugin store never needs the sessions tables; session-key bindings and which host keeps a session (per-host
    session stores, placement.py) are its own."""
    methods = {name for name in vars(Store) if not name.startswith("_")}
    own = {"session_for_key", "bind_session_key", "unbind_session", "session_host", "set_session_host"}
    assert not {m for m in methods if "session" in m} - own
