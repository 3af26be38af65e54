"""``free_ports`` hands out ports below the kernel's ephemeral range, in turn, from a
share of its own for each pytest-xdist worker: a port found free in the ephemeral range
could be taken by any process's next outgoing connection before its server bound it (a
Ray head's GCS once failed so), and a port handed out must not come round again while
the process it was meant for may still be about to bind it."""

from __future__ import annotations

import socket

import pytest

from hack.localcluster import cluster


def ephemeral_start() -> int:
    return int(cluster._EPHEMERAL_RANGE.read_text().split()[0])


def test_ports_come_from_below_the_ephemeral_range_distinct_and_free() -> None:
    ports = [cluster.free_port() for _ in range(50)] + cluster.free_ports(10)
    assert len(set(ports)) == len(ports), ports
    assert all(cluster.own_ports().start <= p < ephemeral_start() for p in ports), ports
    for port in ports[:5]:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", port))  # nothing holds it


def test_each_test_worker_has_a_share_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    shares = []
    for worker in ("gw0", "gw1", "gw2", "gw7"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        shares.append(set(cluster.own_ports()))
    for index, share in enumerate(shares):
        assert len(share) >= 1000
        for other in shares[index + 1 :]:
            assert not share & other


def test_a_port_in_use_is_skipped_and_a_block_is_free_throughout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Where the worker's share has eleven free ports in a row: its control plane, its Ray
    # head or its operators may hold any of the others for the whole session.
    share = cluster.own_ports()
    start = next(
        port for port in range(share.start, share.stop - 11)
        if all(cluster._nothing_listens(p) for p in range(port, port + 11))
    )  # fmt: skip
    monkeypatch.setattr(cluster, "_next_port", start - share.start)
    with socket.socket() as held:
        held.bind(("127.0.0.1", start + 1))
        held.listen()
        first, third = cluster.free_ports(2)
        assert (first, third) == (start, start + 2)
        # A block may not contain the held port: it starts after it, and the next port
        # handed out comes after the block.
        monkeypatch.setattr(cluster, "_next_port", start - share.start)
        base = cluster.free_port_block(8)
        assert base == start + 2
        assert cluster.free_port() == start + 10


def test_no_free_port_left_says_where_it_looked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster, "_nothing_listens", lambda _port: False)
    with pytest.raises(RuntimeError, match=r"no 1 free ports in a row on 127\.0\.0\.1 in \d+-\d+"):
        cluster.free_port()
