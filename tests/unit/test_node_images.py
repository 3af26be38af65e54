"""The names the real node imports images under are the names the kubelet asks for."""

from __future__ import annotations

import pytest

from hack.node.images import fully_qualified


@pytest.mark.parametrize(
    ("given", "asked"),
    [
        ("rayproject/ray:2.52.1", "docker.io/rayproject/ray:2.52.1"),
        ("busybox", "docker.io/library/busybox:latest"),
        ("registry.invalid/pulumi-ray/operator:node-tier",
         "registry.invalid/pulumi-ray/operator:node-tier"),
        ("localhost/x", "localhost/x:latest"),
        ("127.0.0.1:5000/ray@sha256:" + "a" * 64, "127.0.0.1:5000/ray@sha256:" + "a" * 64),
        ("kuberay/operator@sha256:" + "b" * 64, "docker.io/kuberay/operator@sha256:" + "b" * 64),
    ],
)  # fmt: skip
def test_references_are_fully_qualified_as_the_kubelet_asks(given: str, asked: str) -> None:
    assert fully_qualified(given) == asked
