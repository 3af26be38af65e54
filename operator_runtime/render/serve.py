"""The body of the Serve config PUT (``PUT /api/serve/applications/``).

KubeRay reads ``serveConfigV2`` with apimachinery's YAML reader (sigs.k8s.io/yaml:
go-yaml v2's YAML 1.1 scalars, then JSON numbers kept as int64 where they fit, else
float64), sets ``target_capacity`` in incremental mode, and sends ``json.Marshal`` of
the map. ``serve_config_body`` gives that map; ``serve_config_json`` the exact bytes.
"""

from __future__ import annotations

import json
from typing import Any

from operator_runtime.api import RayService
from operator_runtime.render._gofmt import go_json, go_yaml_to_json
from operator_runtime.render.pods import RenderError


def _int64_or_float(value: Any) -> Any:
    """ConvertMapNumbers: an integer beyond int64 becomes a float64, as in KubeRay."""
    if isinstance(value, dict):
        return {key: _int64_or_float(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_int64_or_float(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        return float(value)
    return value


def serve_config_body(service: RayService, *, target_capacity: int | None = None) -> dict[str, Any]:
    """``serveConfigV2`` as a JSON-ready dict (keys sorted, as Go writes a map), plus
    ``target_capacity`` when given. Raises ``RenderError`` for YAML that is not valid or
    not a mapping (KubeRay's unmarshal into a map fails the same way); an empty config
    is ``{}``."""
    text = service.spec.serve_config_v2 or ""
    try:
        decoded = json.loads(go_yaml_to_json(text))
    except ValueError as error:
        raise RenderError(f"spec.serveConfigV2: {error}") from None
    if decoded is None:
        decoded = {}
    if not isinstance(decoded, dict):
        raise RenderError(f"spec.serveConfigV2: a mapping is needed, not {type(decoded).__name__}")
    body: dict[str, Any] = _int64_or_float(decoded)
    if target_capacity is not None:
        body["target_capacity"] = target_capacity
    return {key: body[key] for key in sorted(body)}


def serve_config_json(service: RayService, *, target_capacity: int | None = None) -> bytes:
    """The PUT body byte for byte as KubeRay sends it (``json.Marshal`` of the map)."""
    body = serve_config_body(service, target_capacity=target_capacity)
    return go_json(body).encode()
