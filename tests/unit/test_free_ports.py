"""``free_ports`` never hands a port out twice in one process: the process a port was
meant for may not have bound it yet when the next one is asked for. The OS is stood in
for where it would have to misbehave on cue: it offers the port it just offered again."""

from __future__ import annotations

import itertools
from typing import Any, ClassVar

import pytest

from hack.localcluster import cluster


class EagerOS:
    """A socket whose bind(0) gets the last port offered again until that port is held
    by a socket still bound (as Linux may do once a probe is closed)."""

    held: ClassVar[set[int]] = set()
    fresh = itertools.count(41000)
    last = 0

    def __init__(self, *_args: Any) -> None:
        self.port = 0

    def __enter__(self) -> EagerOS:
        return self

    def __exit__(self, *_args: Any) -> None:
        EagerOS.held.discard(self.port)

    def bind(self, _address: tuple[str, int]) -> None:
        port = EagerOS.last if EagerOS.last and EagerOS.last not in EagerOS.held else 0
        self.port = port or next(EagerOS.fresh)
        EagerOS.last = self.port
        EagerOS.held.add(self.port)

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)


def test_a_port_once_handed_out_is_never_handed_out_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cluster.socket, "socket", EagerOS)
    monkeypatch.setattr(cluster, "_HANDED_OUT", set(), raising=False)
    ports = [cluster.free_port() for _ in range(5)] + cluster.free_ports(3)
    assert len(set(ports)) == len(ports), ports


def test_real_ports_are_distinct_and_free() -> None:
    ports = [cluster.free_port() for _ in range(50)] + cluster.free_ports(10)
    assert len(set(ports)) == len(ports)
    for port in ports[:5]:
        with cluster.socket.socket() as probe:
            probe.bind(("127.0.0.1", port))  # nothing holds it
