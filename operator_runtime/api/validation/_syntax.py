"""Small syntax checks KubeRay borrows from Go libraries: DNS names, label syntax,
Kubernetes generic versions, Go durations and robfig cron schedules.

Each follows the Go behaviour closely enough that the same inputs pass and fail.
"""

from __future__ import annotations

import re
import zoneinfo
from typing import Final

from croniter import croniter

_DNS1035_LABEL: Final = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1123_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN: Final = re.compile(
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
)
_QUALIFIED_NAME: Final = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE: Final = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_GENERIC_VERSION: Final = re.compile(r"^\s*v?([0-9]+(?:\.[0-9]+)*)(.*)$", re.DOTALL)
_GO_DURATION: Final = re.compile(r"[-+]?((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+")
_GO_DURATION_PART: Final = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNITS: Final = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_CRON_DESCRIPTORS: Final = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
DNS_LABEL_MAX: Final = 63
DNS_SUBDOMAIN_MAX: Final = 253


def is_dns1035_label(value: str) -> bool:
    """RFC 1035 label: lowercase alphanumerics and '-', starts with a letter, <= 63."""
    return len(value) <= DNS_LABEL_MAX and _DNS1035_LABEL.fullmatch(value) is not None


def is_dns1123_label(value: str) -> bool:
    """RFC 1123 label: lowercase alphanumerics and '-', alphanumeric ends, <= 63."""
    return len(value) <= DNS_LABEL_MAX and _DNS1123_LABEL.fullmatch(value) is not None


def is_dns1123_subdomain(value: str) -> bool:
    """RFC 1123 subdomain, the name of most objects: dot-separated labels, <= 253."""
    return len(value) <= DNS_SUBDOMAIN_MAX and _DNS1123_SUBDOMAIN.fullmatch(value) is not None


def qualified_name_error(key: str) -> str | None:
    """Why ``key`` is not a valid label key (``[prefix/]name``), or None."""
    parts = key.split("/")
    if len(parts) > 2:
        return "a label key has at most one '/'"
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            return "the prefix must be a DNS-1123 subdomain (e.g. example.com)"
    if not name:
        return "the name part must not be empty"
    if len(name) > DNS_LABEL_MAX:
        return "the name part must be at most 63 characters"
    if not _QUALIFIED_NAME.fullmatch(name):
        return "the name part must be alphanumerics, '-', '_' or '.', alphanumeric at both ends"
    return None


def label_value_error(value: str) -> str | None:
    """Why ``value`` is not a valid label value, or None."""
    if len(value) > DNS_LABEL_MAX:
        return "a label value must be at most 63 characters"
    if not _LABEL_VALUE.fullmatch(value):
        return "a label value must be alphanumerics, '-', '_' or '.', alphanumeric at both ends"
    return None


def parse_generic_version(text: str) -> tuple[int, ...] | None:
    """Parse like Kubernetes' ``version.ParseGeneric``: at least two numeric components,
    an optional leading 'v', anything after the numbers ignored. None if invalid."""
    match = _GENERIC_VERSION.match(text)
    if match is None:
        return None
    components = match.group(1).split(".")
    if len(components) < 2:
        return None
    if components[0].startswith("0") and components[0] != "0":
        return None
    return tuple(int(c) for c in components)


def version_less_than(version: tuple[int, ...], minimum: tuple[int, ...]) -> bool:
    """Component-wise comparison; missing components count as zero."""
    width = max(len(version), len(minimum))
    pad = (0,) * width
    return (version + pad)[:width] < (minimum + pad)[:width]


def parse_go_duration(text: str) -> float | None:
    """Seconds of a Go ``time.ParseDuration`` string (``"1h30m"``, ``"-5s"``), or None."""
    if text in ("0", "+0", "-0"):
        return 0.0
    if not _GO_DURATION.fullmatch(text):
        return None
    sign = -1.0 if text.startswith("-") else 1.0
    total = sum(
        float(number) * _DURATION_UNITS[unit] for number, unit in _GO_DURATION_PART.findall(text)
    )
    return sign * total


def parse_go_int(text: str) -> int | None:
    """Go ``strconv.Atoi``: optional sign and decimal digits only."""
    if re.fullmatch(r"[-+]?\d+", text) is None:
        return None
    return int(text)


def cron_schedule_error(schedule: str) -> str | None:
    """Why robfig/cron's ``ParseStandard`` would refuse ``schedule``, or None."""
    if schedule.startswith("@"):
        if schedule in _CRON_DESCRIPTORS:
            return None
        if schedule.startswith("@every "):
            if parse_go_duration(schedule.removeprefix("@every ")) is None:
                return "@every needs a Go duration such as 1h30m"
            return None
        return f"unknown descriptor {schedule!r}"
    fields = schedule.split()
    if len(fields) != 5:
        return f"expected 5 fields (minute hour day-of-month month weekday), got {len(fields)}"
    if not croniter.is_valid(schedule):
        return "a field is out of range or malformed"
    return None


def time_zone_error(name: str) -> str | None:
    """Why Go's ``time.LoadLocation`` would refuse ``name``, or None."""
    if name in ("UTC", "Local"):
        return None
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"unknown time zone {name!r}"
    return None
