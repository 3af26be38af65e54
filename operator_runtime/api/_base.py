"""The base every ray.io/v1 model stands on.

Kubernetes speaks camelCase JSON; Python code reads better in snake_case. Every model
therefore carries camelCase aliases and accepts both spellings, so a raw KubeRay YAML
and ``RayClusterSpec(worker_group_specs=[...])`` parse alike. Unknown keys are refused
(``extra="forbid"``): a typo in a manifest is an error, never silently dropped.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from typing_extensions import TypeAliasType

JSONValue = TypeAliasType(
    "JSONValue",
    "str | int | float | bool | list[JSONValue] | dict[str, JSONValue] | None",
)
"""Any JSON value, as found in embedded Kubernetes objects."""

JSONObject = dict[str, JSONValue]
"""A JSON object: an embedded Kubernetes object kept as plain data."""


class K8sSchema:
    """Marks a field whose schema is a Kubernetes type, taken from the Kubernetes OpenAPI
    document when the CRDs are generated (e.g. ``io.k8s.api.core.v1.PodTemplateSpec``).

    The model keeps such a field as plain JSON: the API server validates it against the
    full schema, and the operator hands it on unchanged.
    """

    __slots__ = ("definition",)

    def __init__(self, definition: str) -> None:
        self.definition = definition

    def __repr__(self) -> str:
        return f"K8sSchema({self.definition!r})"

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> Any:
        schema = handler(core_schema)
        schema["x-k8s-definition"] = self.definition
        return schema


def k8s(definition: str) -> Any:
    """``Annotated[JSONObject, k8s("io.k8s.api.core.v1.X")]`` helper for readability."""
    return Annotated[JSONObject, K8sSchema(definition)]


class KubeModel(BaseModel):
    """A frozen ray.io/v1 structure: snake_case in Python, camelCase on the wire."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
        frozen=True,
    )

    def to_dict(self) -> JSONObject:
        """The wire form: camelCase keys, ``None`` fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
