"""Names reach the request path only through ``ResourceKind.path``, which refuses any a
Kubernetes object cannot have; and a read answered with another object is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from operator_runtime.runtime import errors
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import (
    NAMESPACE,
    RAY_CLUSTER,
    ROLE,
    SECRET,
    SERVICE,
    KindRegistry,
    NameRule,
    ResourceKind,
)
from operator_runtime.runtime.transport import Response

TRAVERSALS = [
    "../../victim/rayclusters/prod",
    "..",
    ".",
    "a/b",
    "a%2F..",
    "",
    "UPPER",
    "a" * 254,
    "name?watch=true",
    "name#x",
    "-leading-dash",
]


@pytest.mark.parametrize("name", TRAVERSALS)
def test_a_name_no_object_can_have_never_becomes_a_path(name: str) -> None:
    with pytest.raises(errors.InvalidName) as refused:
        RAY_CLUSTER.path("tenant-a", name)
    assert refused.value.field == "name"
    assert (refused.value.kind, refused.value.namespace) == ("RayCluster", "tenant-a")
    assert "RayCluster" in str(refused.value) and "no request was sent" in str(refused.value)
    assert isinstance(refused.value, errors.PermanentError), "retrying cannot help"
    assert not isinstance(refused.value, errors.ApiError), "not a failed request"


@pytest.mark.parametrize("namespace", ["../victim", "a/b", "Tenant", "a" * 64, "a.b"])
def test_a_namespace_must_be_a_dns1123_label(namespace: str) -> None:
    with pytest.raises(errors.InvalidName) as refused:
        SECRET.path(namespace, "token")
    assert refused.value.field == "namespace"
    with pytest.raises(errors.InvalidName):
        SECRET.path(namespace)  # a list in that namespace, too


def test_a_subresource_is_one_lowercase_word() -> None:
    assert RAY_CLUSTER.path("a", "c", "status").endswith("/rayclusters/c/status")
    for subresource in ("../../x", "status/..", "Status"):
        with pytest.raises(errors.InvalidName) as refused:
            RAY_CLUSTER.path("a", "c", subresource)
        assert refused.value.field == "subresource"


def test_valid_names_keep_their_paths() -> None:
    assert RAY_CLUSTER.path("tenant-a", "prod") == (
        "/apis/ray.io/v1/namespaces/tenant-a/rayclusters/prod"
    )
    assert SERVICE.path("a", "x.y-1") == "/api/v1/namespaces/a/services/x.y-1"
    assert SERVICE.path(None) == SERVICE.path("") == "/api/v1/services"
    assert RAY_CLUSTER.path("a", "a" * 253).endswith("a" * 253)
    assert NAMESPACE.path("ignored", "tenant-a") == "/api/v1/namespaces/tenant-a"


def test_rbac_names_follow_the_path_segment_rule() -> None:
    assert ROLE.path("a", "system:controller:x").endswith("/roles/system:controller:x")
    for name in ("..", "a/b", "a%2f"):
        with pytest.raises(errors.InvalidName):
            ROLE.path("a", name)


def test_a_path_segment_name_is_escaped_in_its_path() -> None:
    """ "?" and "#" pass the path-segment rule, and would end the path unescaped."""
    assert ROLE.path("a", "odd?name#x y").endswith("/roles/odd%3Fname%23x%20y")
    assert ROLE.path("a", "odd?name#x y", "status").endswith("/roles/odd%3Fname%23x%20y/status")
    assert ROLE.path("a", "system:controller:x@y").endswith("/roles/system:controller:x@y")


def test_a_discovered_kind_still_refuses_traversal() -> None:
    registry = KindRegistry(kinds=(), discover=lambda _: [
        {"name": "widgets", "kind": "Widget", "namespaced": True}
    ])  # fmt: skip
    widget = registry.resolve("example.com/v1", "Widget")
    assert widget.names is NameRule.PATH_SEGMENT
    with pytest.raises(errors.InvalidName):
        widget.path("a", "../../b/widgets/w")


class Recording:
    """A transport that answers every request with one body and records the paths."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.paths: list[str] = []

    def request(self, method: str, path: str, **_: Any) -> Response:
        self.paths.append(path)
        return Response(200, json.dumps(self.body).encode())

    def stream(self, path: str, **_: Any) -> Any:
        raise AssertionError("no watch expected")


def test_the_client_sends_nothing_for_an_invalid_name() -> None:
    transport = Recording({})
    client = KubeClient(transport, sleep=lambda _: None)  # type: ignore[arg-type]
    calls = [
        lambda: client.get(RAY_CLUSTER, "../../b/rayclusters/x", "a"),
        lambda: client.find(SECRET, "../b", "a"),
        lambda: client.delete(SERVICE, "../../kube-system/services/kube-dns", "a"),
        lambda: client.patch(SERVICE, "..", "a", {}),
        lambda: client.update({"apiVersion": "v1", "kind": "Service",
                               "metadata": {"name": "../x", "namespace": "a"}}),
        lambda: client.create({"apiVersion": "v1", "kind": "Service",
                               "metadata": {"name": "x", "namespace": "../b"}}),
    ]  # fmt: skip
    for call in calls:
        with pytest.raises(errors.InvalidName):
            call()
    assert transport.paths == []


@pytest.mark.parametrize(
    "answer",
    [
        {"metadata": {"name": "prod", "namespace": "victim"}},
        {"metadata": {"name": "other", "namespace": "a"}},
        {"metadata": {"name": "prod"}},
        {},
    ],
)
def test_a_read_answered_with_another_object_is_refused(answer: dict[str, Any]) -> None:
    client = KubeClient(Recording(answer), sleep=lambda _: None)  # type: ignore[arg-type]
    with pytest.raises(errors.ForeignObject) as refused:
        client.get(RAY_CLUSTER, "prod", "a")
    assert "a/prod" in str(refused.value)


def test_a_list_in_a_namespace_refuses_items_from_another() -> None:
    listing = {"items": [{"metadata": {"name": "x", "namespace": "victim"}}], "metadata": {}}
    client = KubeClient(Recording(listing), sleep=lambda _: None)  # type: ignore[arg-type]
    with pytest.raises(errors.ForeignObject):
        client.list(SERVICE, "a")
    assert client.list(SERVICE, None)["items"], "across namespaces any namespace is fine"


def test_a_cluster_scoped_read_has_no_namespace_to_compare() -> None:
    node_kind = ResourceKind("v1", "Namespace", "namespaces", namespaced=False)
    client = KubeClient(Recording({"metadata": {"name": "a"}}), sleep=lambda _: None)  # type: ignore[arg-type]
    assert client.get(node_kind, "a")["metadata"]["name"] == "a"
