"""Names in a spec that the operator uses to read or write another object: the Secret
of ``authOptions.secretName``, a custom head or serve Service, the RayCluster of a
``clusterSelector``, a PVC, a ServiceAccount. Ours, not KubeRay's: a value that no
object can have (``../other-namespace/...``) would otherwise wait forever, and the
operator's client refuses to put it into a request path anyway.
"""

from __future__ import annotations

from collections.abc import Iterator

from operator_runtime.api.common import OBJECT_NAME_RULE
from operator_runtime.api.errors import ErrorCode as C
from operator_runtime.api.errors import Violation
from operator_runtime.api.raycluster import RayClusterSpec
from operator_runtime.api.validation._pod import metadata_name
from operator_runtime.api.validation._syntax import is_dns1123_subdomain


def name_violations(path: str, value: str | None, what: str) -> Iterator[Violation]:
    """A violation when ``value`` (set and not empty) is not an object name. The value
    itself stays out of the message: it is hostile input."""
    if value and not is_dns1123_subdomain(value):
        yield Violation(
            C.FIELD_NOT_OBJECT_NAME,
            path,
            f"the {what} name is not {OBJECT_NAME_RULE}",
            f"name an existing {what} of this namespace",
        )


def cluster_reference_violations(spec: RayClusterSpec, prefix: str) -> Iterator[Violation]:
    """The names a RayClusterSpec gives to objects the operator reads by name."""
    head = spec.head_group_spec
    yield from name_violations(
        f"{prefix}.headGroupSpec.headService.metadata.name",
        metadata_name(head.head_service),
        "Service",
    )
    pod_spec = head.template.get("spec")
    account = pod_spec.get("serviceAccountName") if isinstance(pod_spec, dict) else None
    yield from name_violations(
        f"{prefix}.headGroupSpec.template.spec.serviceAccountName",
        account if isinstance(account, str) else None,
        "ServiceAccount",
    )
    if spec.auth_options is not None:
        yield from name_violations(
            f"{prefix}.authOptions.secretName", spec.auth_options.secret_name, "Secret"
        )
    options = spec.gcs_fault_tolerance_options
    if options is not None and options.storage is not None:
        yield from name_violations(
            f"{prefix}.gcsFaultToleranceOptions.storage.claimName",
            options.storage.claim_name,
            "PersistentVolumeClaim",
        )
