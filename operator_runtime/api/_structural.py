"""Pydantic JSON schema + Kubernetes OpenAPI definitions -> one structural CRD schema.

The API server only accepts *structural* schemas: every node has a ``type``, there are no
``$ref``s, ``anyOf``/``oneOf`` appear only as value validations, and defaults are plain
values. Pydantic emits the opposite habits (``$defs``, ``anyOf [X, null]`` for
``Optional``, ``title`` everywhere, numeric ``exclusiveMinimum``), and the Kubernetes
document wraps every reference in ``allOf``. This module rewrites both into one inlined
tree, refusing (with the JSON path) anything it cannot express, so a model change that
would produce a schema the API server rejects fails at generation time, not at install.

Kubernetes definitions are converted the way controller-gen converts Go types:
int-or-string and ``resource.Quantity`` become ``x-kubernetes-int-or-string`` with
``anyOf [integer, string]``; an ``ObjectMeta`` below the root becomes the embedded form
(annotations, finalizers, labels, name, namespace); patch-strategy and union extensions
are dropped; the document's zero-value defaults (``""``, ``0``, ``false``, ``{}``) are
dropped, because they would make ``required`` meaningless (``Container.name`` carries
``default: ""``) and materialise empty objects, except where the API server demands a
default (a list-map key that is not required).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Schema = dict[str, Any]
"""One JSON schema node."""

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
K8S_DEFINITION_KEY = "x-k8s-definition"
JSON_VALUE_DEF = "JSONValue"

EMBEDDED_META_FIELDS = ("annotations", "finalizers", "labels", "name", "namespace")
"""The ObjectMeta fields a template may set; the API server fills in the rest."""

QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
"""resource.Quantity's serialization grammar (signed number + SI/binary suffix or exponent)."""

EXPLAINED_BY_KUBECTL: dict[str, str] = {
    "io.k8s.api.core.v1.PodTemplateSpec": "podtemplate.template",
    "io.k8s.api.core.v1.Service": "service",
    "io.k8s.api.core.v1.EnvVar": "pod.spec.containers.env",
    "io.k8s.api.core.v1.EnvVarSource": "pod.spec.containers.env.valueFrom",
    "io.k8s.api.core.v1.EnvFromSource": "pod.spec.containers.envFrom",
    "io.k8s.api.core.v1.VolumeMount": "pod.spec.containers.volumeMounts",
    "io.k8s.api.core.v1.ResourceRequirements": "pod.spec.containers.resources",
    "io.k8s.api.core.v1.SecurityContext": "pod.spec.containers.securityContext",
    "io.k8s.api.networking.v1.IngressTLS": "ingress.spec.tls",
    "io.k8s.api.networking.v1.NetworkPolicyIngressRule": "networkpolicy.spec.ingress",
    "io.k8s.api.networking.v1.NetworkPolicyEgressRule": "networkpolicy.spec.egress",
}
"""Built-in types whose docs ``kubectl explain`` already serves under these paths: where a
model embeds one, its fields keep their full schema (types, formats, required, list maps,
patterns) but not Kubernetes' descriptions, which were two thirds of every CRD's bytes
(a PodTemplateSpec carries ~300 kB of them) and travelled through every ``pulumi preview``.
The embedding field's description says where the docs are. Small definitions (Condition,
OwnerReference, Time) keep theirs."""

_ZERO_VALUES: dict[str, Any] = {"string": "", "integer": 0, "number": 0, "boolean": False}

_MODEL_PASSTHROUGH = frozenset(
    {
        "description", "type", "format", "enum", "minimum", "maximum", "minLength",
        "maxLength", "pattern", "minItems", "maxItems", "minProperties", "maxProperties",
        "multipleOf", "nullable", "x-kubernetes-validations", "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
        "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
    }
)  # fmt: skip
_MODEL_DROPPED = frozenset(
    {"title", "examples", "deprecated", "readOnly", "writeOnly", "$defs", "$schema"}
)
_K8S_PASSTHROUGH = frozenset(
    {"type", "format", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
     "x-kubernetes-map-type"}
)  # fmt: skip
_K8S_DROPPED = frozenset(
    {"x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key", "x-kubernetes-unions",
     "x-kubernetes-group-version-kind", "allOf", "$ref"}
)  # fmt: skip


class SchemaError(ValueError):
    """A model's schema cannot be expressed as a structural CRD schema."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path or '.'}: {problem}")
        self.path = path


def int_or_string(description: str | None = None) -> Schema:
    """The structural int-or-string shape the API server recognises (exactly this anyOf)."""
    node: Schema = {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }
    if description:
        node["description"] = description
    return node


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _merge(base: Schema, override: Schema) -> Schema:
    """``override`` (the referencing field) wins, except that CEL rules of both apply."""
    merged = dict(base)
    for key, value in override.items():
        if key == "default" and value is None:
            continue
        if key == "x-kubernetes-validations" and key in base:
            merged[key] = [*base[key], *value]
        else:
            merged[key] = value
    return merged


def _single_ref(node: Schema) -> str | None:
    """The target of ``$ref`` or of a one-element ``allOf [$ref]`` wrapper, if any."""
    if "$ref" in node:
        return _ref_name(node["$ref"])
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        return _ref_name(all_of[0]["$ref"])
    return None


class KubernetesSchemas:
    """Converts definitions of the Kubernetes OpenAPI v3 document into structural form."""

    def __init__(self, definitions: Mapping[str, Schema]) -> None:
        self._definitions = definitions

    def field(self, name: str, path: str) -> Schema:
        """The full structural schema of definition ``name``, as used at ``path``: described
        throughout, or, for a type of ``EXPLAINED_BY_KUBECTL``, described only by a
        pointer to ``kubectl explain``."""
        explained_at = EXPLAINED_BY_KUBECTL.get(name)
        node = self._definition(name, path, (), describe=explained_at is None)
        if explained_at is not None:
            kind = name.rsplit(".", 1)[-1]
            node["description"] = (
                f"A Kubernetes {kind}, every field typed and checked; for the fields' "
                f"docs, run `kubectl explain {explained_at}`."
            )
        return node

    def _definition(self, name: str, path: str, stack: tuple[str, ...], describe: bool) -> Schema:
        if name in (QUANTITY, INT_OR_STRING):
            node = int_or_string()
            if name == QUANTITY:
                node["pattern"] = QUANTITY_PATTERN
            return node
        if name in stack:
            raise SchemaError(path, f"recursive Kubernetes definition {name}")
        raw = self._definitions.get(name)
        if raw is None:
            raise SchemaError(
                path,
                f"Kubernetes definition {name} is not in the committed schema data; "
                "run `python -m operator_runtime.api.crds --refresh-k8s-schemas PATH`",
            )
        if name == OBJECT_META:
            embedded: Schema = {"type": "object"}
            if "description" in raw:
                embedded["description"] = raw["description"]
            embedded["properties"] = {k: raw["properties"][k] for k in EMBEDDED_META_FIELDS}
            raw = embedded
        return self._node(raw, path, (*stack, name), describe)

    def _node(self, raw: Schema, path: str, stack: tuple[str, ...], describe: bool) -> Schema:
        ref = _single_ref(raw)
        out: Schema = self._definition(ref, path, stack, describe) if ref else {}
        if not describe:
            out.pop("description", None)
        for key, value in raw.items():
            if key in _K8S_DROPPED:
                continue
            if key == "description":
                if describe:
                    out[key] = value
            elif key == "required":
                out[key] = sorted(value)
            elif key in _K8S_PASSTHROUGH:
                out[key] = value
            elif key == "default":
                # Zero values are Go's omitempty artefacts, not API defaults (module doc).
                if value not in ("", 0, False, {}, []):
                    out[key] = value
            elif key == "properties":
                out[key] = {
                    prop: self._node(sub, f"{path}.{prop}", stack, describe)
                    for prop, sub in value.items()
                }
            elif key == "items":
                out[key] = self._node(value, f"{path}[]", stack, describe)
            elif key == "additionalProperties" and isinstance(value, dict):
                out[key] = self._node(value, f"{path}{{}}", stack, describe)
            else:
                raise SchemaError(path, f"unsupported key {key!r} in Kubernetes schema")
        if out.get("x-kubernetes-list-type") == "map":
            _default_map_keys(out, path)
        if out.get("type") == "object" and not {"properties", "additionalProperties"} & set(out):
            out["x-kubernetes-preserve-unknown-fields"] = True  # e.g. FieldsV1; none in pods
        return out


def _default_map_keys(array: Schema, path: str) -> None:
    """The API server demands that list-map keys be required or defaulted."""
    items = array.get("items", {})
    properties = items.get("properties", {})
    required = set(items.get("required", ()))
    for key in array.get("x-kubernetes-list-map-keys", ()):
        prop = properties.get(key)
        if prop is None or key in required or "default" in prop:
            continue
        if prop.get("type") not in _ZERO_VALUES:
            raise SchemaError(path, f"list-map key {key!r} needs a default")
        properties[key] = {**prop, "default": _ZERO_VALUES[prop["type"]]}


class ModelSchemaConverter:
    """Converts one pydantic ``model_json_schema()`` into a structural schema."""

    def __init__(self, model_schema: Schema, kubernetes: KubernetesSchemas) -> None:
        self._defs: Mapping[str, Schema] = model_schema.get("$defs", {})
        self._kubernetes = kubernetes

    def convert(self, node: Schema, path: str = "") -> Schema:
        """The structural form of ``node`` (found at JSON path ``path``)."""
        node = self._resolve(node, path, ())
        if node.pop("x-json-value", False):
            free: Schema = {"x-kubernetes-preserve-unknown-fields": True}
            if "description" in node:
                free["description"] = node["description"]
            return free
        definition = node.get(K8S_DEFINITION_KEY)
        if definition is not None:
            field_keys = {
                key: node[key]
                for key in ("description", "default", "x-kubernetes-validations")
                if node.get(key) is not None
            }
            embedded = self._kubernetes.field(definition, path)
            if definition in EXPLAINED_BY_KUBECTL and "description" in field_keys:
                # Our words first, then where Kubernetes' docs of its fields are.
                field_keys["description"] += "\n\n" + embedded["description"]
            return _merge(embedded, field_keys)
        return self._convert_keys(node, path)

    def _resolve(self, node: Schema, path: str, seen: tuple[str, ...]) -> Schema:
        """Inline ``$ref``/``allOf`` and collapse ``Optional``'s ``anyOf [X, null]``."""
        ref = _single_ref(node)
        if ref is not None:
            rest = {k: v for k, v in node.items() if k not in ("$ref", "allOf")}
            if ref == JSON_VALUE_DEF:
                return _merge({"x-json-value": True}, rest)
            if ref in seen:
                raise SchemaError(path, f"recursive model {ref} cannot be inlined")
            if ref not in self._defs:
                raise SchemaError(path, f"unknown $ref {ref}")
            return self._resolve(_merge(self._defs[ref], rest), path, (*seen, ref))
        any_of = node.get("anyOf")
        if any_of is None:
            return dict(node)
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        branches = [b for b in any_of if b != {"type": "null"}]
        if len(branches) == 1:
            return self._resolve(_merge(branches[0], rest), path, seen)
        if sorted(b.get("type", "") for b in branches) == ["integer", "string"] and all(
            len(b) == 1 for b in branches
        ):
            return _merge({"x-int-or-string": True}, rest)
        raise SchemaError(path, f"a union of {len(branches)} types has no structural form")

    def _convert_keys(self, node: Schema, path: str) -> Schema:
        if node.pop("x-int-or-string", False):
            kept = ("description", "default", "x-kubernetes-validations")
            return _merge(int_or_string(), {k: v for k, v in node.items() if k in kept})
        out: Schema = {}
        for key, value in node.items():
            if key in _MODEL_DROPPED:
                continue
            if key in _MODEL_PASSTHROUGH:
                out[key] = value
            elif key == "const":
                out["enum"] = [value]
            elif key == "default":
                if value is not None:
                    out[key] = value
            elif key in ("exclusiveMinimum", "exclusiveMaximum"):
                # JSON Schema 2020-12 (pydantic) has numeric bounds; OpenAPI v3.0 a flag.
                bound = "minimum" if key == "exclusiveMinimum" else "maximum"
                out[bound] = value
                out[key] = True
            elif key == "uniqueItems":
                # The API server forbids uniqueItems (quadratic); a set list says the same.
                if value:
                    out["x-kubernetes-list-type"] = "set"
            elif key == "properties":
                out[key] = {p: self.convert(s, f"{path}.{p}") for p, s in value.items()}
            elif key == "required":
                out[key] = sorted(value)
            elif key == "items":
                out[key] = self.convert(value, f"{path}[]")
            elif key == "additionalProperties":
                if isinstance(value, dict) and _single_ref(value) == JSON_VALUE_DEF:
                    out["x-kubernetes-preserve-unknown-fields"] = True  # JSONObject
                elif isinstance(value, dict):
                    out[key] = self.convert(value, f"{path}{{}}")
                elif value is True:
                    out["x-kubernetes-preserve-unknown-fields"] = True
            else:
                raise SchemaError(path, f"unsupported JSON schema key {key!r}")
        return _finish_model_node(out, path)


def _finish_model_node(out: Schema, path: str) -> Schema:
    if "enum" in out:
        out["enum"] = [v for v in out["enum"] if v is not None]
        kinds = {type(v) for v in out["enum"]}
        if "type" not in out and kinds in ({str}, {bool}, {int}):
            out["type"] = {str: "string", bool: "boolean", int: "integer"}[kinds.pop()]
        if "type" not in out:
            raise SchemaError(path, f"enum {out['enum']} mixes types")
    if isinstance(out.get("type"), list):
        raise SchemaError(path, f"a list of types {out['type']} has no structural form")
    if out.get("type") == "object":
        if out.get("x-kubernetes-preserve-unknown-fields") and out.get("properties") == {}:
            del out["properties"]
        if "properties" not in out and "additionalProperties" not in out:
            out["x-kubernetes-preserve-unknown-fields"] = True
    elif "type" not in out and not out.get("x-kubernetes-int-or-string"):
        out["x-kubernetes-preserve-unknown-fields"] = True  # ``Any``: free-form by intent
    if out.get("x-kubernetes-list-type") == "set":
        item_type = out.get("items", {}).get("type")
        if item_type in ("object", "array"):
            raise SchemaError(path, "a set of objects or lists has no structural form")
    return out
