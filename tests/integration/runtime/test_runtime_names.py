"""A name that is a valid path segment but not a DNS name (a Role's may hold "?", "#"
and spaces) reaches the API server escaped, as kubectl sends it: the object read back is
the one of that name."""

from __future__ import annotations

from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import ROLE


def test_a_role_whose_name_holds_query_and_fragment_characters(
    client: KubeClient, namespace: str
) -> None:
    name = "odd?name#x y"
    client.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": name, "namespace": namespace}, "rules": []})  # fmt: skip
    assert client.get(ROLE, name, namespace)["metadata"]["name"] == name
    patched = client.patch(ROLE, name, namespace, {"metadata": {"labels": {"seen": "yes"}}})
    assert patched["metadata"]["labels"] == {"seen": "yes"}
    client.delete(ROLE, name, namespace)
    assert client.find(ROLE, name, namespace) is None
