"""Resource kinds: how a group/version/kind maps to a REST path.

The kinds the operator uses are registered up front (no discovery round trip, and a
typo fails at start-up). Anything else is resolved once through API discovery and
remembered. Objects stay plain JSON dicts throughout the runtime.

``ResourceKind.path`` is the one place a request path is built, so it is where names
are checked: every namespace must be a DNS-1123 label, every name a valid object name
for its kind (a DNS-1123 subdomain; RBAC objects, and kinds found through discovery,
only a path segment), every subresource one lowercase word. Anything else raises
``InvalidName`` and no request is made. Names come from specs, and a name such as
``../../victim/rayclusters/prod`` would otherwise reach another namespace: urllib3
removes dot segments before the request leaves.
"""

from __future__ import annotations

import re
import threading
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

from operator_runtime.api.validation import is_dns1123_label, is_dns1123_subdomain
from operator_runtime.runtime.errors import InvalidName

Object = dict[str, Any]
"""A Kubernetes object as decoded JSON."""


def being_deleted(obj: Object) -> bool:
    """Whether ``obj`` carries a deletion timestamp (Terminating, for a pod)."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


_SUBRESOURCE: Final = re.compile(r"[a-z]+")
_SEGMENT_SAFE: Final = "!$&'()*+,;=:@"
"""RFC 3986's sub-delims, ":" and "@": what a path segment holds unescaped."""
_NAMESPACE_RULE: Final = "a DNS-1123 label (lowercase alphanumerics and '-', at most 63)"


class NameRule(Enum):
    """What the API server accepts as a name of a kind (apimachinery's rules)."""

    DNS_SUBDOMAIN = "a DNS-1123 subdomain (lowercase alphanumerics, '-' and '.', at most 253)"
    PATH_SEGMENT = "a path segment (not '.' or '..', no '/' or '%')"


def is_path_segment(value: str) -> bool:
    """apimachinery's IsValidPathSegmentName, and not empty."""
    return value not in ("", ".", "..") and "/" not in value and "%" not in value


_NAME_CHECKS: Final[dict[NameRule, Callable[[str], bool]]] = {
    NameRule.DNS_SUBDOMAIN: is_dns1123_subdomain,
    NameRule.PATH_SEGMENT: is_path_segment,
}


@dataclass(frozen=True)
class ResourceKind:
    """One served resource: ``apps/v1`` + ``Deployment`` is ``deployments``, namespaced.

    ``names`` is the rule an object name of this kind follows; ``path`` refuses others.
    """

    api_version: str
    kind: str
    plural: str
    namespaced: bool = True
    names: NameRule = NameRule.DNS_SUBDOMAIN

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The REST path; ``namespace=None`` on a namespaced kind means all namespaces.

        Raises ``InvalidName`` for a namespace, name or subresource no object can have.
        """
        self.check(namespace, name, subresource)
        prefix = f"/apis/{self.api_version}" if self.group else f"/api/{self.api_version}"
        parts = [prefix]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name is not None:
            # A path-segment name may hold "?", "#" or a space, which would end the path
            # or be refused by urllib3: escaped, as client-go escapes it; the server
            # unescapes it. A DNS subdomain needs none (and skips the call).
            parts.append(
                urllib.parse.quote(name, safe=_SEGMENT_SAFE)
                if self.names is NameRule.PATH_SEGMENT
                else name
            )
            if subresource:
                parts.append(subresource)
        return "/".join(parts)

    def check(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> None:
        """Raise ``InvalidName`` unless each given part is valid for this kind."""
        # "" (like None) is "all namespaces" for a list or watch.
        if self.namespaced and namespace and not is_dns1123_label(namespace):
            raise InvalidName(self.kind, namespace, name, field="namespace", rule=_NAMESPACE_RULE)
        if name is not None and not _NAME_CHECKS[self.names](name):
            raise InvalidName(self.kind, namespace, name, field="name", rule=self.names.value)
        if subresource and not _SUBRESOURCE.fullmatch(subresource):
            raise InvalidName(self.kind, namespace, name, field="subresource",
                              rule="one lowercase word (status, scale, ...)")  # fmt: skip

    def __str__(self) -> str:
        return f"{self.kind}.{self.api_version}"


def _k(
    api_version: str,
    kind: str,
    plural: str,
    namespaced: bool = True,
    names: NameRule = NameRule.DNS_SUBDOMAIN,
) -> ResourceKind:
    return ResourceKind(api_version, kind, plural, namespaced, names)


POD = _k("v1", "Pod", "pods")
SERVICE = _k("v1", "Service", "services")
CONFIG_MAP = _k("v1", "ConfigMap", "configmaps")
SECRET = _k("v1", "Secret", "secrets")
SERVICE_ACCOUNT = _k("v1", "ServiceAccount", "serviceaccounts")
PERSISTENT_VOLUME_CLAIM = _k("v1", "PersistentVolumeClaim", "persistentvolumeclaims")
CORE_EVENT = _k("v1", "Event", "events")
NAMESPACE = _k("v1", "Namespace", "namespaces", namespaced=False)
NODE = _k("v1", "Node", "nodes", namespaced=False)
EVENT = _k("events.k8s.io/v1", "Event", "events")
LEASE = _k("coordination.k8s.io/v1", "Lease", "leases")
JOB = _k("batch/v1", "Job", "jobs")
INGRESS = _k("networking.k8s.io/v1", "Ingress", "ingresses")
ENDPOINT_SLICE = _k("discovery.k8s.io/v1", "EndpointSlice", "endpointslices")
NETWORK_POLICY = _k("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies")
# RBAC names need only be path segments ("system:controller:..." is a valid Role name).
ROLE = _k("rbac.authorization.k8s.io/v1", "Role", "roles", names=NameRule.PATH_SEGMENT)
ROLE_BINDING = _k(
    "rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", names=NameRule.PATH_SEGMENT
)
RAY_CLUSTER = _k("ray.io/v1", "RayCluster", "rayclusters")
RAY_JOB = _k("ray.io/v1", "RayJob", "rayjobs")
RAY_SERVICE = _k("ray.io/v1", "RayService", "rayservices")
RAY_CRON_JOB = _k("ray.io/v1", "RayCronJob", "raycronjobs")
GATEWAY = _k("gateway.networking.k8s.io/v1", "Gateway", "gateways")
HTTP_ROUTE = _k("gateway.networking.k8s.io/v1", "HTTPRoute", "httproutes")
VOLCANO_POD_GROUP = _k("scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups")
PLUGINS_POD_GROUP = _k("scheduling.x-k8s.io/v1alpha1", "PodGroup", "podgroups")
WORKLOAD = _k("scheduling.k8s.io/v1alpha2", "Workload", "workloads")
WORKLOAD_POD_GROUP = _k("scheduling.k8s.io/v1alpha2", "PodGroup", "podgroups")
CERTIFICATE = _k("cert-manager.io/v1", "Certificate", "certificates")
ISSUER = _k("cert-manager.io/v1", "Issuer", "issuers")

KNOWN_KINDS: tuple[ResourceKind, ...] = (
    POD, SERVICE, CONFIG_MAP, SECRET, SERVICE_ACCOUNT, PERSISTENT_VOLUME_CLAIM, CORE_EVENT,
    NAMESPACE, NODE, EVENT, LEASE, JOB, INGRESS, ENDPOINT_SLICE, NETWORK_POLICY, ROLE, ROLE_BINDING,
    RAY_CLUSTER, RAY_JOB, RAY_SERVICE, RAY_CRON_JOB, GATEWAY, HTTP_ROUTE, VOLCANO_POD_GROUP,
    PLUGINS_POD_GROUP, WORKLOAD, WORKLOAD_POD_GROUP, CERTIFICATE, ISSUER,
)  # fmt: skip

Discover = Callable[[str], list[Object]]
"""Fetches the ``resources`` of an APIResourceList for an apiVersion."""


class KindRegistry:
    """apiVersion + kind -> ``ResourceKind``, known kinds first, discovery as a fallback."""

    def __init__(
        self, kinds: Iterable[ResourceKind] = KNOWN_KINDS, discover: Discover | None = None
    ) -> None:
        self._lock = threading.Lock()
        self._kinds = {(k.api_version, k.kind): k for k in kinds}
        self._discover = discover

    @property
    def has_discovery(self) -> bool:
        return self._discover is not None

    def set_discovery(self, discover: Discover) -> None:
        self._discover = discover

    def register(self, kind: ResourceKind) -> None:
        with self._lock:
            self._kinds[(kind.api_version, kind.kind)] = kind

    def resolve(self, api_version: str, kind: str) -> ResourceKind:
        """The kind, discovering and remembering it if it is not registered."""
        with self._lock:
            found = self._kinds.get((api_version, kind))
        if found is not None:
            return found
        if self._discover is None:
            raise LookupError(f"unknown kind {kind}.{api_version} and no discovery configured")
        for resource in self._discover(api_version):
            # Subresources ("pods/status") share the kind of their parent; skip them.
            if resource.get("kind") == kind and "/" not in str(resource.get("name", "")):
                # Its name rule is unknown here: the one every kind shares.
                resolved = ResourceKind(
                    api_version, kind, str(resource["name"]), bool(resource.get("namespaced")),
                    NameRule.PATH_SEGMENT,
                )  # fmt: skip
                self.register(resolved)
                return resolved
        raise LookupError(f"the API server does not serve {kind}.{api_version}")

    def for_object(self, obj: Object) -> ResourceKind:
        return self.resolve(str(obj["apiVersion"]), str(obj["kind"]))
