"""Checks of what a platform team sets on the operator's pod and ServiceAccount: the
image, pull secrets, labels and annotations, scheduling, the security context, the
ServiceAccount, the scrape interval. Each returns the settled value or raises
``Refusal`` naming the argument; ``checks.settle`` calls them."""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s
from pydantic.alias_generators import to_camel

from .._offline import OFFLINE, OPERATOR_IMAGE_STAND_IN
from .args import OperatorServiceAccount
from .monitoring import SCRAPE_INTERVAL
from .refusal import Refusal

__all__ = [
    "DEFAULT_POD_SECURITY_CONTEXT",
    "IMAGE_GUIDANCE",
    "OWN_LABEL_KEYS",
    "annotation_map",
    "image",
    "label_map",
    "object_names",
    "pod_security_context",
    "scrape_interval",
    "service_account",
    "tolerations",
]

IMAGE_GUIDANCE: Final = (
    "build the image with `make image`, push it to your registry with "
    "`python -m hack.image push <registry>/<repo>:<tag>` (it prints the reference with its "
    'digest), then pass image="<registry>/<repo>@sha256:<digest>" (pinned by digest, '
    "recommended); see docs/releasing.md"
)
"""How to get an image, in every error about a missing one (component and stack config)."""

_NAME_COMPONENT: Final = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN: Final = (
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
    r"|\[[0-9A-Fa-f:]+\])(?::[0-9]+)?"
)
_IMAGE_REFERENCE: Final = re.compile(
    rf"(?:{_DOMAIN}/)?{_NAME_COMPONENT}(?:/{_NAME_COMPONENT})*"
    r"(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?"
)
"""The grammar of the distribution project's reference (domain, path, tag, digest),
sha256 digests only."""
_DNS_LABEL: Final = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN: Final = re.compile(rf"{_DNS_LABEL}(?:\.{_DNS_LABEL})*")
_QUALIFIED_NAME: Final = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DURATION: Final = re.compile(r"(?=\d)(\d+y)?(\d+w)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?(\d+ms)?")
"""Prometheus's duration (``30s``, ``1m30s``)."""

OWN_LABEL_KEYS: Final = frozenset(
    {
        "app.kubernetes.io/name",
        "app.kubernetes.io/instance",
        "app.kubernetes.io/component",
        "app.kubernetes.io/managed-by",
    }
)
"""Labels the component sets and selects by; a user's value would break the selectors."""
DEFAULT_POD_SECURITY_CONTEXT: Final[Mapping[str, object]] = {
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}
"""What the ``restricted`` Pod Security Standard asks of the pod, which the Namespace
this component creates enforces."""
_POD_SECURITY_FIELDS: Final = frozenset(
    to_camel(name)
    for name in inspect.signature(k8s.core.v1.PodSecurityContextArgs.__init__).parameters
    if name != "self"
)


def image(value: pulumi.Input[str] | None) -> pulumi.Input[str]:
    """The operator's image; required, but offline (``render``, ``review``), where no
    rendered object depends on it, a missing one is a stand-in (``components._offline``)."""
    if value is None and OFFLINE.get():
        return OPERATOR_IMAGE_STAND_IN
    if value is None:
        raise Refusal(
            "image",
            "is required: no operator image is published to a registry the project "
            "controls, so there is no default to fall back on",
            IMAGE_GUIDANCE,
            "IMAGE_REQUIRED",
        )
    if isinstance(value, str) and (
        len(value) > 512 or not _IMAGE_REFERENCE.fullmatch(value.strip()) or value != value.strip()
    ):
        raise Refusal(
            "image",
            f"{value!r} is not an image reference",
            "write <registry>/<repo>@sha256:<64 hex digits> or <registry>/<repo>:<tag> "
            "(lowercase repository, no scheme)",
            "IMAGE",
        )
    return value


def object_names(path: str, value: Sequence[str], code: str) -> tuple[str, ...]:
    """Names of objects in a namespace (Secrets, a PriorityClass)."""
    if isinstance(value, str):
        raise Refusal(path, f"is the string {value!r}, not a list", f"write [{value!r}]", code)
    for name in value:
        _check_subdomain(path, name, code)
    return tuple(value)


def _check_subdomain(path: str, name: object, code: str) -> None:
    if not isinstance(name, str) or not _DNS_SUBDOMAIN.fullmatch(name) or len(name) > 253:
        raise Refusal(
            path,
            f"{name!r} is not the name of a Kubernetes object",
            "use lowercase letters, digits, '-' and '.'",
            code,
        )


def label_map(path: str, value: Mapping[str, str] | None) -> dict[str, str]:
    given = _string_map(path, value)
    for key, text in given.items():
        if key in OWN_LABEL_KEYS:
            raise Refusal(
                f"{path}.{key}",
                "is set by the component, which selects its pods by it",
                "use another key",
                "LABELS",
            )
        if text and (len(text) > 63 or not _QUALIFIED_NAME.fullmatch(text)):
            raise Refusal(
                f"{path}.{key}",
                f"{text!r} is not a label value",
                "at most 63 letters, digits, '-', '_' or '.', starting and ending with "
                "a letter or digit",
                "LABELS",
            )
    return given


def annotation_map(path: str, value: Mapping[str, str] | None) -> dict[str, str]:
    return _string_map(path, value)


def _string_map(path: str, value: Mapping[str, str] | None) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise Refusal(path, f"must be a mapping, got {value!r}", '{"team": "ml"}', "LABELS")
    for key, text in value.items():
        prefix, _, name = str(key).rpartition("/")
        if (
            not isinstance(key, str)
            or not _QUALIFIED_NAME.fullmatch(name)
            or len(name) > 63
            or (prefix and not _DNS_SUBDOMAIN.fullmatch(prefix))
        ):
            raise Refusal(
                f"{path}.{key}",
                "is not a valid key",
                "write [prefix/]name, e.g. example.com/team",
                "LABELS",
            )
        if not isinstance(text, str):
            raise Refusal(f"{path}.{key}", f"must be a string, got {text!r}", "quote it", "LABELS")
    return dict(sorted(value.items()))


def tolerations(value: Sequence[Any] | None) -> list[Any] | None:
    if value is None:
        return None
    if isinstance(value, Mapping | k8s.core.v1.TolerationArgs | str):
        raise Refusal(
            "tolerations", "is one toleration, not a list", "wrap it in a list", "TOLERATIONS"
        )
    return list(value)


def pod_security_context(value: Mapping[str, object] | None) -> dict[str, object]:
    """``value`` merged key by key over ``DEFAULT_POD_SECURITY_CONTEXT``."""
    for key in value or {}:
        if key not in _POD_SECURITY_FIELDS:
            raise Refusal(
                f"pod_security_context.{key}",
                "is not a field of a pod's securityContext",
                f"use the YAML (camelCase) names: {', '.join(sorted(_POD_SECURITY_FIELDS))}",
                "POD_SECURITY_CONTEXT",
            )
    return {**DEFAULT_POD_SECURITY_CONTEXT, **(value or {})}


def service_account(
    value: OperatorServiceAccount | None, base_name: str
) -> tuple[bool, str, dict[str, str]]:
    """(create it, its name, its annotations)."""
    given = value or OperatorServiceAccount()
    if given.name is not None:
        _check_subdomain("service_account.name", given.name, "SERVICE_ACCOUNT")
    if given.create is not False:
        notes = annotation_map("service_account.annotations", given.annotations)
        return True, given.name or base_name, notes
    if given.name is None:
        raise Refusal(
            "service_account.name",
            "is not set, and create is False: there is no account to run as",
            "name the existing ServiceAccount in the operator's namespace",
            "SERVICE_ACCOUNT",
        )
    if given.annotations:
        raise Refusal(
            "service_account.annotations",
            "are given for an account this component does not create (create=False)",
            "annotate the existing account where it is managed, or let the component create it",
            "SERVICE_ACCOUNT",
        )
    return False, given.name, {}


def scrape_interval(value: str | None) -> str:
    if value is None:
        return SCRAPE_INTERVAL
    if not isinstance(value, str) or not _DURATION.fullmatch(value):
        raise Refusal(
            "service_monitor_interval",
            f"{value!r} is not a Prometheus duration",
            'e.g. "30s" or "1m"',
            "SCRAPE_INTERVAL",
        )
    return value
