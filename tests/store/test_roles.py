"""The store roles stay narrow: no role protocol has more than 15 methods, and `Store` is only their sum."""

from __future__ import annotations

import inspect
from typing import Protocol

from hermes_api_plugin.store import roles
from hermes_api_plugin.store.postgres.store import PostgresStore
from hermes_api_plugin.store.sqlite.store import SqliteStore

MAX_METHODS = 15


def members(protocol: type) -> set[str]:
    """The methods and properties a protocol declares itself."""
    return {
        name
        for name, value in vars(protocol).items()
        if not name.startswith("_") and (inspect.isfunction(value) or isinstance(value, property))
    }


def role_protocols() -> list[type]:
    return [
        cls
        for _, cls in inspect.getmembers(roles, inspect.isclass)
        if cls.__module__ == roles.__name__ and Protocol in cls.__mro__ and cls is not roles.Store
    ]


def test_no_store_role_has_more_than_15_methods() -> None:
    found = role_protocols()
    assert len(found) >= 8  # every role, SessionStore included, is looked at
    sizes = {cls.__name__: len(members(cls)) for cls in found}
    assert all(0 < n <= MAX_METHODS for n in sizes.values()), sizes


def test_store_declares_nothing_but_the_plugin_roles() -> None:
    assert members(roles.Store) == set()
    bases = {base for base in roles.Store.__bases__ if base is not Protocol}
    assert bases == set(role_protocols()) - {roles.SessionStore}


def test_each_backend_implements_every_method_of_every_plugin_role() -> None:
    wanted = set().union(*(members(base) for base in roles.Store.__bases__ if base is not Protocol))
    for backend in (SqliteStore, PostgresStore):
        assert wanted <= {name for name in dir(backend) if not name.startswith("_")}, backend.__name__
