"""A pass that starts before the cache has seen our last status write starts from the
written object instead (``OwnWrites``)."""

from __future__ import annotations

from operator_runtime.controllers.ownwrites import OwnWrites
from operator_runtime.runtime.reconcile import ObjectKey

KEY = ObjectKey("ns", "svc")


def version(rv: str, traffic: int = 0) -> dict[str, object]:
    return {"metadata": {"resourceVersion": rv}, "status": {"traffic": traffic}}


def test_a_cache_without_our_write_yields_the_written_object() -> None:
    writes = OwnWrites()
    writes.wrote(KEY, version("1"), version("2", traffic=25))
    assert writes.fresh(KEY, version("1")) == version("2", traffic=25)


def test_every_version_our_writes_replaced_counts_as_stale() -> None:
    writes = OwnWrites()
    writes.wrote(KEY, version("1"), version("2", traffic=25))
    writes.wrote(KEY, version("2", traffic=25), version("3", traffic=50))
    assert writes.fresh(KEY, version("1")) == version("3", traffic=50)
    assert writes.fresh(KEY, version("2")) == version("3", traffic=50)


def test_once_the_cache_moves_on_it_is_used_again() -> None:
    writes = OwnWrites()
    writes.wrote(KEY, version("1"), version("2", traffic=25))
    assert writes.fresh(KEY, version("2", traffic=25)) == version("2", traffic=25)
    # Forgotten: an old version seen later (it cannot be) would not be replaced.
    assert writes.fresh(KEY, version("1")) == version("1")


def test_a_change_by_someone_else_wins() -> None:
    writes = OwnWrites()
    writes.wrote(KEY, version("1"), version("2", traffic=25))
    assert writes.fresh(KEY, version("7", traffic=0)) == version("7", traffic=0)


def test_other_objects_and_forgotten_ones_read_the_cache() -> None:
    writes = OwnWrites()
    writes.wrote(KEY, version("1"), version("2", traffic=25))
    assert writes.fresh(ObjectKey("ns", "other"), version("1")) == version("1")
    writes.forget(KEY)
    assert writes.fresh(KEY, version("1")) == version("1")
