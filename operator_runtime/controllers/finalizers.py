"""Adding and removing one finalizer, for every controller that holds one.

The patch names the list as seen with the object's ``resourceVersion``: a concurrent
change to the list (another controller's finalizer) makes it fail with a conflict and
the pass runs again, instead of being overwritten.
"""

from __future__ import annotations

from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import Object, ResourceKind


def finalizers(raw: Object) -> list[str]:
    return [str(f) for f in (raw.get("metadata") or {}).get("finalizers") or ()]


def set_finalizer(
    client: KubeClient, kind: ResourceKind, raw: Object, finalizer: str, *, present: bool
) -> Object:
    """The object as the API server returned it after the change."""
    wanted = [f for f in finalizers(raw) if f != finalizer] + ([finalizer] if present else [])
    metadata = raw["metadata"]
    return client.patch(
        kind,
        str(metadata["name"]),
        str(metadata.get("namespace") or ""),
        {"metadata": {"finalizers": wanted}},
        resource_version=metadata.get("resourceVersion"),
    )
