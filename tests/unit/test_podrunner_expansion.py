"""The pod runner expands ``$(VAR)`` in env, command and args as the kubelet does
(k8s.io/kubernetes third_party/forked/golang/expansion), so a submitter command reaches
its shell as it would in a real pod."""

from __future__ import annotations

import pytest

from tests.podrunner import expand

VARIABLES = {"ADDRESS": "head-svc.ns.svc.cluster.local:8265", "EMPTY": ""}


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("--address http://$(ADDRESS)", "--address http://head-svc.ns.svc.cluster.local:8265"),
        ("[$(EMPTY)]", "[]"),
        ("$(UNDEFINED) stays", "$(UNDEFINED) stays"),
        ("$$(ADDRESS) is escaped", "$(ADDRESS) is escaped"),
        ("$$ is one dollar", "$ is one dollar"),
        (
            "shell $ADDRESS and ${ADDRESS} are the shell's",
            "shell $ADDRESS and ${ADDRESS} are the shell's",
        ),
        ("unclosed $(ADDRESS", "unclosed $(ADDRESS"),
        ("trailing $", "trailing $"),
    ],
)
def test_expand(text: str, expanded: str) -> None:
    assert expand(text, VARIABLES) == expanded
