"""The generated CRDs: up to date, structural, sized for etcd, with KubeRay's names and
columns, the models' CEL rules and full Kubernetes schemas for embedded objects.

``structural_violations`` re-states, in Python, the rules kube-apiserver applies to a CRD
schema (apiextensions validation + structural schema invariants), so a schema the API
server would refuse fails here first.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
import yaml
from pydantic import ConfigDict, Field

from hack import gobuild
from hack.localcluster import versions as localcluster_versions
from operator_runtime.api import crds
from operator_runtime.api._base import JSONObject, JSONValue, K8sSchema, KubeModel
from operator_runtime.api._structural import (
    QUANTITY_PATTERN,
    KubernetesSchemas,
    ModelSchemaConverter,
    SchemaError,
)

REPO = Path(__file__).resolve().parents[3]

# Field names of apiextensions.k8s.io/v1 JSONSchemaProps: anything else is refused.
JSON_SCHEMA_PROPS = frozenset(
    {
        "description", "type", "format", "title", "default", "maximum", "exclusiveMaximum",
        "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems",
        "minItems", "uniqueItems", "multipleOf", "enum", "maxProperties", "minProperties",
        "required", "items", "allOf", "oneOf", "anyOf", "not", "properties",
        "additionalProperties", "patternProperties", "dependencies", "additionalItems",
        "definitions", "externalDocs", "example", "nullable",
        "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string", "x-kubernetes-list-map-keys", "x-kubernetes-list-type",
        "x-kubernetes-map-type", "x-kubernetes-validations",
    }
)  # fmt: skip
# Legal for the API server, but never wanted in our output (each has a structural twin).
# ``nullable`` is not among them: it has no twin, and ``test_only_go_nulls_are_nullable``
# holds it to the fields that need it.
UNWANTED = frozenset(
    {"title", "allOf", "oneOf", "not", "uniqueItems", "patternProperties",
     "dependencies", "additionalItems", "definitions", "x-kubernetes-embedded-resource"}
)  # fmt: skip
CEL_RULE_FIELDS = frozenset(
    {"rule", "message", "messageExpression", "reason", "fieldPath", "optionalOldSelf"}
)
TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})
INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


def _matches(value: Any, schema: dict[str, Any]) -> bool:
    """Enough of OpenAPI validation to check that a default fits its schema."""
    if schema.get("x-kubernetes-int-or-string"):
        ok = isinstance(value, (int, str)) and not isinstance(value, bool)
    else:
        expected: dict[str, type | tuple[type, ...]] = {
            "string": str, "integer": int, "number": (int, float), "boolean": bool,
            "object": dict, "array": list,
        }  # fmt: skip
        ok = isinstance(value, expected.get(schema.get("type", ""), object))
        ok = ok and (schema.get("type") == "boolean" or not isinstance(value, bool))
    if ok and "enum" in schema:
        ok = value in schema["enum"]
    if ok and isinstance(value, dict):
        properties = schema.get("properties", {})
        ok = all(key in value for key in schema.get("required", ())) and all(
            _matches(v, properties[k]) for k, v in value.items() if k in properties
        )
    if ok and isinstance(value, list) and "items" in schema:
        ok = all(_matches(v, schema["items"]) for v in value)
    return ok


def _node_violations(node: dict[str, Any], path: str) -> Iterator[str]:
    for key in sorted(set(node) - JSON_SCHEMA_PROPS):
        yield f"{path}: {key!r} is not a JSONSchemaProps field"
    for key in sorted(set(node) & UNWANTED):
        yield f"{path}: {key!r} has a structural equivalent"
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    if "anyOf" in node and not (int_or_string and node["anyOf"] == INT_OR_STRING_ANY_OF):
        yield f"{path}: anyOf other than int-or-string"
    if int_or_string and ("type" in node or "x-kubernetes-preserve-unknown-fields" in node):
        yield f"{path}: int-or-string must have neither type nor preserve-unknown-fields"
    if node.get("x-kubernetes-preserve-unknown-fields", True) is not True:
        yield f"{path}: x-kubernetes-preserve-unknown-fields must be true or absent"
    kind = node.get("type")
    if kind is None and not int_or_string and "x-kubernetes-preserve-unknown-fields" not in node:
        yield f"{path}: no type"
    if kind is not None and kind not in TYPES:
        yield f"{path}: type {kind!r}"
    if "default" in node and (node["default"] is None or not _matches(node["default"], node)):
        yield f"{path}: default {node['default']!r} does not fit the schema"
    if "enum" in node and not (node["enum"] and all(_matches(v, node) for v in node["enum"])):
        yield f"{path}: enum {node['enum']!r} is empty or does not fit the type"
    for key in ("exclusiveMinimum", "exclusiveMaximum"):
        if key in node and not isinstance(node[key], bool):
            yield f"{path}: {key} must be a boolean in OpenAPI v3.0"
    if kind == "array" and not isinstance(node.get("items"), dict):
        yield f"{path}: array without an items schema"
    if kind != "array" and ("items" in node or "x-kubernetes-list-type" in node):
        yield f"{path}: items or list-type on a non-array"
    if "properties" in node and "additionalProperties" in node:
        yield f"{path}: properties and additionalProperties together"
    if "additionalProperties" in node and not isinstance(node["additionalProperties"], dict):
        yield f"{path}: additionalProperties must be a schema"
    if ("properties" in node or "additionalProperties" in node) and kind != "object":
        yield f"{path}: properties on a non-object"
    if "x-kubernetes-map-type" in node and (
        kind != "object" or node["x-kubernetes-map-type"] not in ("atomic", "granular")
    ):
        yield f"{path}: bad x-kubernetes-map-type"
    missing = set(node.get("required", ())) - set(node.get("properties", {}))
    if missing:
        yield f"{path}: required names unknown properties {sorted(missing)}"
    for rule in node.get("x-kubernetes-validations", ()):
        if not isinstance(rule.get("rule"), str) or set(rule) - CEL_RULE_FIELDS:
            yield f"{path}: malformed CEL rule {rule!r}"
    yield from _list_violations(node, path)


def _list_violations(node: dict[str, Any], path: str) -> Iterator[str]:
    list_type, items = node.get("x-kubernetes-list-type"), node.get("items", {})
    keys = node.get("x-kubernetes-list-map-keys", [])
    if keys and list_type != "map":
        yield f"{path}: list-map-keys without list-type map"
    if list_type not in (None, "atomic", "set", "map"):
        yield f"{path}: list-type {list_type!r}"
    if list_type == "set" and (
        items.get("type") == "array"
        or (items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic")
    ):
        yield f"{path}: set items must be scalars or atomic"
    if list_type == "map":
        if not keys or items.get("type") != "object":
            yield f"{path}: list-type map needs keys and object items"
        for key in keys:
            prop = items.get("properties", {}).get(key)
            if prop is None or prop.get("type") in ("object", "array"):
                yield f"{path}: list-map key {key!r} must be a scalar property"
            elif key not in items.get("required", ()) and "default" not in prop:
                yield f"{path}: list-map key {key!r} must be required or defaulted"


def structural_violations(root: dict[str, Any]) -> list[str]:
    """Every reason kube-apiserver (or our own standards) would have to refuse ``root``."""
    found: list[str] = []
    if root.get("type") != "object" or "additionalProperties" in root:
        found.append("root must be an object without additionalProperties")
    properties = root.get("properties", {})
    if properties.get("metadata") != {"type": "object"}:
        found.append("root metadata must be exactly {type: object}")
    for name in ("apiVersion", "kind"):
        if properties.get(name, {}).get("type") != "string":
            found.append(f"root {name} must be a string")

    def visit(node: Any, path: str) -> None:
        if not isinstance(node, dict):
            found.append(f"{path}: not a schema")
            return
        found.extend(_node_violations(node, path))
        for name, sub in node.get("properties", {}).items():
            visit(sub, f"{path}.{name}")
        if isinstance(node.get("items"), dict):
            visit(node["items"], f"{path}[]")
        if isinstance(node.get("additionalProperties"), dict):
            visit(node["additionalProperties"], f"{path}{{}}")

    visit(root, "")
    return found


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return crds.generate()


@pytest.fixture(scope="module")
def bundle() -> str:
    return crds.bundle_text(crds.generate_manifests())


@pytest.fixture(scope="module")
def manifests(bundle: str) -> dict[str, dict[str, Any]]:
    """The generated CRDs by kind, read from the bundle: the YAML is megabytes, and
    ``test_the_yaml_files_say_what_the_bundle_says`` holds the two to each other."""
    return {manifest["spec"]["names"]["kind"]: manifest for manifest in json.loads(bundle)}


def schema_of(manifest: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = manifest["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def at(schema: dict[str, Any], *path: str) -> dict[str, Any]:
    """The node under a property path; ``[]`` steps into array items."""
    for step in path:
        schema = schema["items"] if step == "[]" else schema["properties"][step]
    return schema


def walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


# --- the committed files ---------------------------------------------------------------


def test_committed_crds_are_up_to_date(generated: dict[str, str]) -> None:
    stale = list(crds.stale_files(generated))
    assert not stale, "run `python -m operator_runtime.api.crds`\n" + "".join(stale)[:4000]
    assert sorted(generated) == sorted(p.name for p in crds.CRD_DIR.glob("*.yaml"))


def test_the_committed_json_bundle_is_the_committed_crds(bundle: str) -> None:
    assert crds.BUNDLE.read_text(encoding="utf-8") == bundle, (
        "run `python -m operator_runtime.api.crds`"
    )
    kinds = [m["spec"]["names"]["kind"] for m in crds.load_bundle()]
    assert sorted(kinds) == ["RayCluster", "RayCronJob", "RayJob", "RayService"]


def test_stale_files_are_reported_with_a_diff(generated: dict[str, str], tmp_path: Path) -> None:
    for name, text in generated.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    edited = tmp_path / "ray.io_rayjobs.yaml"
    edited.write_text(edited.read_text(encoding="utf-8").replace("rayjobs", "rayjobz", 1))
    [diff] = crds.stale_files(generated, tmp_path)
    assert "-  name: rayjobz.ray.io" in diff and "+  name: rayjobs.ray.io" in diff


def test_check_passes_in_a_fresh_interpreter_with_another_hash_seed() -> None:
    # Set and dict orders must not leak into the output: a different hash seed and a new
    # process must produce the same bytes.
    result = subprocess.run(
        [sys.executable, "-m", "operator_runtime.api.crds", "--check"],
        cwd=REPO,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_the_yaml_files_say_what_the_bundle_says(generated: dict[str, str], bundle: str) -> None:
    # The bundle is written from the manifests, not parsed from the YAML: what kubectl
    # applies from the files must be what programs load from the bundle.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    read_back = [yaml.load(generated[name], Loader=loader) for name in sorted(generated)]
    assert read_back == json.loads(bundle)


def test_libyaml_writes_the_bytes_pure_python_yaml_writes(
    generated: dict[str, str], manifests: dict[str, dict[str, Any]]
) -> None:
    # render_yaml emits with libyaml for speed (10x; the pure-Python emitter was 90% of
    # `generate`). The committed bytes must not depend on it: a PyYAML without libyaml
    # would fall back to PythonDumper and must write the same files. All four CRDs
    # through the Python emitter cost 3 s; the smallest, RayCluster, holds every kind of
    # node and doc text the others do.
    assert crds.Dumper is not crds.PythonDumper, "PyYAML without libyaml: CRDs render slowly"
    python_text = crds.render_yaml(manifests["RayCluster"], crds.PythonDumper)
    assert python_text == generated["ray.io_rayclusters.yaml"]
    # The emitters do differ on a few inputs: libyaml escapes characters outside the
    # BMP and NEL, and writes an empty key plainly. Keep them out of the models' docs.
    for name, text in generated.items():
        odd = re.findall("[\x85\U00010000-\U0010ffff]", text)
        assert not odd, f"{name}: {odd[:5]} are written differently by the two emitters"
    for kind, manifest in manifests.items():
        assert not [n for n in walk(manifest) if "" in n], f"{kind}: an empty key"
    odd = {"emoji 🙂": "", "nel\x85x": "", "": ""}
    assert crds.render_yaml(odd, crds.PythonDumper) != crds.render_yaml(odd)


def test_files_say_they_are_generated(generated: dict[str, str]) -> None:
    for text in generated.values():
        assert text.startswith("# Generated by `python -m operator_runtime.api.crds`")
        assert "Do not edit" in text.splitlines()[1]


def test_kubernetes_schema_data_records_its_source() -> None:
    content = json.loads(crds.KUBERNETES_SCHEMA_FILE.read_text(encoding="utf-8"))
    assert content["source"]["module"] == "k8s.io/kubernetes"
    assert content["source"]["version"].startswith("v1.34.")
    assert "io.k8s.api.core.v1.PodTemplateSpec" in content["definitions"]


def _kubernetes_openapi_dir() -> Path:
    """The OpenAPI v3 documents of the Kubernetes module the local control plane pins,
    from the Go module cache (downloaded if missing: this test never skips)."""
    module = f"k8s.io/kubernetes@{localcluster_versions.KUBERNETES}"
    found = subprocess.run(
        [gobuild.go(), "mod", "download", "-json", module],
        cwd=REPO / "hack" / "localcluster" / "gomod" / "kubernetes",
        env=gobuild.go_env(), capture_output=True, text=True, check=True,
    )  # fmt: skip
    return Path(json.loads(found.stdout)["Dir"]) / "api" / "openapi-spec" / "v3"


def test_kubernetes_schema_data_is_reproducible() -> None:
    roots = crds.referenced_kubernetes_definitions(crds.load_models())
    fresh = crds.refresh_kubernetes_schemas(_kubernetes_openapi_dir(), roots)
    committed = json.loads(crds.KUBERNETES_SCHEMA_FILE.read_text(encoding="utf-8"))
    assert fresh == committed


# --- structure ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [r.kind for r in crds.RESOURCES])
def test_schema_is_structural(manifests: dict[str, dict[str, Any]], kind: str) -> None:
    assert structural_violations(schema_of(manifests[kind])) == []


CLUSTER_SPEC_AT = {
    "RayCluster": "spec",
    "RayJob": "spec.rayClusterSpec",
    "RayService": "spec.rayClusterConfig",
    "RayCronJob": "spec.jobTemplate.rayClusterSpec",
}


def nullable_paths(node: dict[str, Any], path: str = "") -> Iterator[str]:
    if node.get("nullable"):
        yield path.lstrip(".")
    for name, sub in node.get("properties", {}).items():
        yield from nullable_paths(sub, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        yield from nullable_paths(node["items"], f"{path}[]")


@pytest.mark.parametrize("kind", [r.kind for r in crds.RESOURCES])
def test_only_go_nulls_are_nullable(manifests: dict[str, dict[str, Any]], kind: str) -> None:
    """Only ``rayStartParams`` takes ``null``: Kueue's webhook patches it in
    (``operator_runtime.api.raycluster.NULL_FROM_GO_CLIENTS``)."""
    at_ = CLUSTER_SPEC_AT[kind]
    assert sorted(nullable_paths(schema_of(manifests[kind]))) == [
        f"{at_}.headGroupSpec.rayStartParams",
        f"{at_}.workerGroupSpecs[].rayStartParams",
    ]


@pytest.mark.parametrize("kind", [r.kind for r in crds.RESOURCES])
def test_crd_fits_in_etcd(manifests: dict[str, dict[str, Any]], kind: str) -> None:
    assert crds.json_size(manifests[kind]) < crds.MAX_CRD_JSON_BYTES


@pytest.mark.parametrize(
    ("kind", "plural"),
    [("RayCluster", "rayclusters"), ("RayJob", "rayjobs"), ("RayService", "rayservices"),
     ("RayCronJob", "raycronjobs")],
)  # fmt: skip
def test_names_scope_and_version(
    manifests: dict[str, dict[str, Any]], kind: str, plural: str
) -> None:
    manifest = manifests[kind]
    assert manifest["apiVersion"] == "apiextensions.k8s.io/v1"
    assert manifest["metadata"]["name"] == f"{plural}.ray.io"
    spec = manifest["spec"]
    assert spec["group"] == "ray.io" and spec["scope"] == "Namespaced"
    assert spec["names"] == {
        "categories": ["all"], "kind": kind, "listKind": f"{kind}List", "plural": plural,
        "singular": kind.lower(),
    }  # fmt: skip
    [version] = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["subresources"] == {"status": {}}


# (name, jsonPath, type, priority) as KubeRay declares them (fact sheet section 11; types
# from KubeRay's markers: its RayJob times and RayService endpoints are strings).
PRINTER_COLUMNS = {
    "RayCluster": [
        ("desired workers", ".status.desiredWorkerReplicas", "integer", 0),
        ("available workers", ".status.availableWorkerReplicas", "integer", 0),
        ("cpus", ".status.desiredCPU", "string", 0),
        ("memory", ".status.desiredMemory", "string", 0),
        ("gpus", ".status.desiredGPU", "string", 0),
        ("tpus", ".status.desiredTPU", "string", 1),
        ("status", ".status.state", "string", 0),
        ("age", ".metadata.creationTimestamp", "date", 0),
        ("head pod IP", ".status.head.podIP", "string", 1),
        ("head service IP", ".status.head.serviceIP", "string", 1),
    ],
    "RayJob": [
        ("job status", ".status.jobStatus", "string", 0),
        ("deployment status", ".status.jobDeploymentStatus", "string", 0),
        ("ray cluster name", ".status.rayClusterName", "string", 0),
        ("start time", ".status.startTime", "string", 0),
        ("end time", ".status.endTime", "string", 0),
        ("age", ".metadata.creationTimestamp", "date", 0),
    ],
    "RayService": [
        ("service status", ".status.serviceStatus", "string", 0),
        ("num serve endpoints", ".status.numServeEndpoints", "string", 0),
    ],
    "RayCronJob": [
        ("schedule", ".spec.schedule", "string", 0),
        ("timezone", ".spec.timeZone", "string", 0),
        ("last schedule", ".status.lastScheduleTime", "date", 0),
        ("age", ".metadata.creationTimestamp", "date", 0),
        ("suspend", ".spec.suspend", "boolean", 0),
    ],
}


@pytest.mark.parametrize("kind", sorted(PRINTER_COLUMNS))
def test_printer_columns(manifests: dict[str, dict[str, Any]], kind: str) -> None:
    [version] = manifests[kind]["spec"]["versions"]
    columns = [
        (c["name"], c["jsonPath"], c["type"], c.get("priority", 0))
        for c in version["additionalPrinterColumns"]
    ]
    assert columns == PRINTER_COLUMNS[kind]


@pytest.mark.parametrize("kind", sorted(PRINTER_COLUMNS))
def test_printer_columns_point_at_fields(manifests: dict[str, dict[str, Any]], kind: str) -> None:
    schema = schema_of(manifests[kind])
    for _, path, _, _ in PRINTER_COLUMNS[kind]:
        if not path.startswith(".metadata."):
            at(schema, *path.lstrip(".").split("."))  # KeyError if the model lacks it


# --- content -----------------------------------------------------------------------------


def _rules(node: Any) -> set[tuple[str, str]]:
    return {
        (rule["rule"], rule.get("message", ""))
        for n in walk(node)
        for rule in (n.get("x-kubernetes-validations") or ())
        if isinstance(rule, dict) and "rule" in rule
    }


@pytest.mark.parametrize("kind", [r.kind for r in crds.RESOURCES])
def test_every_cel_rule_of_the_model_reaches_the_crd(
    manifests: dict[str, dict[str, Any]], kind: str
) -> None:
    model_rules = _rules(crds.model_schema(crds.load_models()[kind]))
    assert model_rules <= _rules(schema_of(manifests[kind]))


@pytest.mark.parametrize("kind", ["RayCluster", "RayJob", "RayService"])
def test_managed_by_is_immutable_and_enumerated(
    manifests: dict[str, dict[str, Any]], kind: str
) -> None:
    rules = [
        r["rule"]
        for r in at(schema_of(manifests[kind]), "spec", "managedBy")["x-kubernetes-validations"]
    ]
    assert "self == oldSelf" in rules
    assert any("ray.io/kuberay-operator" in r and "kueue.x-k8s.io/multikueue" in r for r in rules)


def _templates(manifests: dict[str, dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    cluster = ("headGroupSpec", "template")
    worker = ("workerGroupSpecs", "[]", "template")
    paths: dict[str, list[tuple[str, ...]]] = {
        "RayCluster": [("spec", *cluster), ("spec", *worker)],
        "RayJob": [("spec", "rayClusterSpec", *cluster), ("spec", "submitterPodTemplate")],
        "RayService": [("spec", "rayClusterConfig", *worker)],
        "RayCronJob": [("spec", "jobTemplate", "rayClusterSpec", *cluster)],
    }
    for kind, kind_paths in paths.items():
        for path in kind_paths:
            yield f"{kind}:{'.'.join(path)}", at(schema_of(manifests[kind]), *path)


def test_pod_templates_are_full_kubernetes_schemas(
    manifests: dict[str, dict[str, Any]],
) -> None:
    for where, template in _templates(manifests):
        containers = at(template, "spec", "containers")
        assert containers["x-kubernetes-list-type"] == "map", where
        assert containers["x-kubernetes-list-map-keys"] == ["name"], where
        container = containers["items"]
        assert "name" in container["required"], where
        # Typed and checked, but Kubernetes' docs are `kubectl explain`'s (module doc).
        assert "kubectl explain podtemplate.template" in template["description"], where
        assert "description" not in container and "description" not in at(container, "image")
        assert at(container, "image")["type"] == "string", where
        limits = at(container, "resources", "limits")["additionalProperties"]
        assert limits["x-kubernetes-int-or-string"] is True, where
        assert limits["pattern"] == QUANTITY_PATTERN, where
        port = at(container, "ports", "[]")
        assert port["properties"]["protocol"]["default"] == "TCP", where
        probe_port = at(container, "livenessProbe", "httpGet", "port")
        assert probe_port["anyOf"] == INT_OR_STRING_ANY_OF, where
        assert set(at(template, "metadata")["properties"]) == {
            "annotations", "finalizers", "labels", "name", "namespace"
        }, where  # fmt: skip
        # Unknown fields must be refused by strict validation, not kept.
        assert not [n for n in walk(template) if "x-kubernetes-preserve-unknown-fields" in n], where


def test_no_free_form_fields_unless_the_model_is_free_form(
    manifests: dict[str, dict[str, Any]],
) -> None:
    for kind, manifest in manifests.items():
        free = [n for n in walk(schema_of(manifest)) if "x-kubernetes-preserve-unknown-fields" in n]
        model_free = [
            n
            for n in walk(crds.model_schema(crds.load_models()[kind]))
            if n.get("$ref", "").endswith("/JSONValue")
        ]
        assert not free or model_free, kind


# --- the converter, on small models --------------------------------------------------------

CORE = "io.k8s.api.core.v1."


@pytest.fixture(scope="module")
def kubernetes() -> KubernetesSchemas:
    return KubernetesSchemas(crds.load_kubernetes_definitions())


class _Item(KubeModel):
    """An item."""

    item_name: str = Field(description="Its name.")
    weight: int = Field(default=1, gt=0, le=100)


class _Spec(KubeModel):
    """A spec."""

    model_config = ConfigDict(
        json_schema_extra={"x-kubernetes-validations": [{"rule": "true", "message": "m"}]}
    )

    items: list[_Item] | None = Field(default=None, description="The items.")
    mode: Literal["a", "b"] | None = None
    fixed: Literal["x"] = "x"
    params: dict[str, str] | None = None
    free: JSONObject | None = Field(default=None, description="Anything.")
    anything: JSONValue = None
    tags: frozenset[str] = frozenset()
    port: int | str | None = None
    template: Annotated[JSONObject, K8sSchema(CORE + "PodTemplateSpec")] = Field(
        description="Our words win."
    )
    tolerations: list[Annotated[JSONObject, K8sSchema(CORE + "Toleration")]] | None = None
    quantity: Annotated[str | int, K8sSchema("io.k8s.apimachinery.pkg.api.resource.Quantity")]
    immutable: str | None = Field(
        default=None,
        json_schema_extra={"x-kubernetes-validations": [{"rule": "self == oldSelf"}]},
    )


def _convert(model: type[KubeModel], kubernetes: KubernetesSchemas) -> dict[str, Any]:
    schema = crds.model_schema(model)
    return ModelSchemaConverter(schema, kubernetes).convert(schema)


def test_optional_literal_dict_and_sets(kubernetes: KubernetesSchemas) -> None:
    spec = _convert(_Spec, kubernetes)
    props = spec["properties"]
    assert props["items"] == {
        "description": "The items.",
        "type": "array",
        "items": {
            "description": "An item.",
            "type": "object",
            "properties": {
                "itemName": {"description": "Its name.", "type": "string"},
                "weight": {
                    "default": 1, "type": "integer", "minimum": 0, "exclusiveMinimum": True,
                    "maximum": 100,
                },
            },
            "required": ["itemName"],
        },
    }  # fmt: skip
    assert props["mode"] == {"enum": ["a", "b"], "type": "string"}
    assert props["fixed"] == {"default": "x", "enum": ["x"], "type": "string"}
    assert props["params"] == {"type": "object", "additionalProperties": {"type": "string"}}
    assert props["tags"]["x-kubernetes-list-type"] == "set" and "uniqueItems" not in props["tags"]
    assert props["port"] == {
        "anyOf": INT_OR_STRING_ANY_OF, "x-kubernetes-int-or-string": True
    }  # fmt: skip
    assert spec["required"] == ["quantity", "template"]
    assert spec["x-kubernetes-validations"] == [{"rule": "true", "message": "m"}]
    assert props["immutable"]["x-kubernetes-validations"] == [{"rule": "self == oldSelf"}]


def test_free_form_only_where_the_model_says_so(kubernetes: KubernetesSchemas) -> None:
    props = _convert(_Spec, kubernetes)["properties"]
    assert props["free"] == {
        "description": "Anything.", "type": "object", "x-kubernetes-preserve-unknown-fields": True
    }  # fmt: skip
    assert props["anything"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert not [n for n in walk(props["template"]) if "x-kubernetes-preserve-unknown-fields" in n]


def test_kubernetes_definitions_are_inlined(kubernetes: KubernetesSchemas) -> None:
    props = _convert(_Spec, kubernetes)["properties"]
    template = props["template"]
    assert "containers" in template["required"] if "required" in template else True
    assert at(template, "spec")["required"] == ["containers"]
    assert at(props["tolerations"], "[]", "tolerationSeconds")["format"] == "int64"
    assert props["quantity"]["pattern"] == QUANTITY_PATTERN
    # Zero-value defaults of the document are dropped (they would defeat `required`)...
    assert "default" not in at(template, "spec", "containers", "[]", "name")
    # ...except where a list-map key needs one.
    secret = at(template, "spec", "imagePullSecrets")
    assert secret["x-kubernetes-list-map-keys"] == ["name"]
    assert at(secret, "[]", "name")["default"] == ""
    # Our description, then where the docs of the built-in type's fields are; every field
    # below keeps its type but not Kubernetes' docs.
    assert template["description"].startswith("Our words win.\n\nA Kubernetes PodTemplateSpec")
    assert "`kubectl explain podtemplate.template`" in template["description"]
    assert not [n for n in walk(at(template, "spec")) if "description" in n]
    assert at(template, "spec", "volumes", "[]", "awsElasticBlockStore", "volumeID")["type"]
    assert structural_violations(
        {"type": "object", "properties": {"apiVersion": {"type": "string"},
         "kind": {"type": "string"}, "metadata": {"type": "object"},
         "spec": _convert(_Spec, kubernetes)}}
    ) == []  # fmt: skip


class _Union(KubeModel):
    value: int | list[str] = 0


class _Missing(KubeModel):
    thing: Annotated[JSONObject, K8sSchema("io.k8s.api.core.v1.NoSuchThing")]


class _Tuple(KubeModel):
    pair: tuple[int, str] = (0, "")


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (_Union, ".value: a union of 2 types"),
        (_Missing, ".thing: Kubernetes definition io.k8s.api.core.v1.NoSuchThing"),
        (_Tuple, ".pair: unsupported JSON schema key 'prefixItems'"),
    ],
)
def test_inexpressible_schemas_name_the_field(
    kubernetes: KubernetesSchemas, model: type[KubeModel], message: str
) -> None:
    with pytest.raises(SchemaError, match=message.replace(".", r"\.", 1)):
        _convert(model, kubernetes)


@pytest.mark.parametrize(
    ("node", "problem"),
    [
        ({"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
         "anyOf other than int-or-string"),
        ({"type": "object", "properties": {"x": {"description": "no type"}}}, "no type"),
        ({"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}}, "'$ref'"),
        ({"type": "object", "properties": {"x": {"type": "string", "default": None}}}, "default"),
        ({"type": "object", "properties": {"x": {"type": "integer", "default": "1"}}}, "default"),
        ({"type": "object", "properties": {"x": {"type": "array"}}}, "items"),
        ({"type": "object", "properties": {"x": {"type": "array", "x-kubernetes-list-type": "map",
          "x-kubernetes-list-map-keys": ["k"], "items": {"type": "object",
          "properties": {"k": {"type": "string"}}}}}}, "required or defaulted"),
        ({"type": "object", "properties": {"x": {"type": "integer", "exclusiveMinimum": 0}}},
         "boolean"),
        ({"type": "object", "properties": {"x": {"type": "object", "title": "X"}}}, "'title'"),
    ],
)  # fmt: skip
def test_the_checker_catches_what_the_api_server_refuses(
    node: dict[str, Any], problem: str
) -> None:
    root = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"},
            "metadata": {"type": "object"}, "spec": node,
        },
    }  # fmt: skip
    violations = structural_violations(root)
    assert any(problem in v for v in violations), violations


def test_yaml_round_trips_and_uses_no_anchors(kubernetes: KubernetesSchemas) -> None:
    manifest = crds.crd_manifest(crds.RESOURCES[0], _Wrapper, kubernetes)
    text = crds.render_yaml(manifest)
    assert "&id" not in text and "*id" not in text
    assert yaml.load(text, Loader=yaml.CSafeLoader) == manifest


class _Wrapper(KubeModel):
    """A kind for tests."""

    api_version: str = "ray.io/v1"
    kind: str = "RayCluster"
    metadata: JSONObject | None = None
    spec: _Spec
    status: _Item | None = None
