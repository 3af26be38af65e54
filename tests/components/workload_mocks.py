"""A Pulumi program run under ``pulumi.runtime.set_mocks`` that records every registration
as the engine would receive it.

``MockMonitor`` keeps only the mocked state; the tests need the request itself: the
parent, the dependencies, the options (custom timeouts, delete-before-replace, provider,
aliases) and the inputs in their wire form, where a secret is a nested
``{sig: secret, value: ...}`` object (``deserialize_properties`` would lift it to the
top-level property, hiding where it was).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import pulumi
import pulumi.runtime
from google.protobuf import json_format
from pulumi.runtime.mocks import MockMonitor

SIG: Final = "4dabf18193072939515e22adb298388d"
SECRET_SIG: Final = "1b47061264138c4ac30d75fd1eb44270"
UNKNOWN: Final = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
NOT_RESOLVED: Final = object()
"""What ``Run.value`` holds when the program's outputs never resolved (unknown)."""

STATUS = {
    "RayCluster": {"state": "ready"},
    "RayJob": {
        "jobDeploymentStatus": "Complete",
        "rayClusterName": "op-made-x7k2p",
        "dashboardURL": "op-made-x7k2p-head-svc.team-a.svc.cluster.local:8265",
    },
    "RayService": {"conditions": [{"type": "Ready", "status": "True"}]},
    "RayCronJob": {"lastScheduleTime": "2026-01-01T02:00:00Z"},
}


@dataclass(frozen=True)
class Registration:
    type: str
    name: str
    parent: str
    dependencies: tuple[str, ...]
    request: Any

    @functools.cached_property
    def raw(self) -> dict[str, Any]:
        """Inputs in wire form: secrets nested where they were, unknowns as ``UNKNOWN``.

        Converted on first use: a RayOperator's four CRDs are megabytes of inputs that
        most tests never read (0.3 s of CPU a run)."""
        raw: dict[str, Any] = json_format.MessageToDict(self.request.object)
        return raw

    @property
    def inputs(self) -> dict[str, Any]:
        """The inputs with every secret unwrapped in place."""
        return unwrap(self.raw)

    @property
    def urn(self) -> str:
        parent_type = self.parent.split("::")[2].split("$")[-1] if self.parent else ""
        qualified = f"{parent_type}${self.type}" if parent_type else self.type
        return f"urn:pulumi:stack::project::{qualified}::{self.name}"


def unwrap(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get(SIG) == SECRET_SIG:
            return unwrap(value.get("value"))
        return {k: unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap(v) for v in value]
    return value


def secret_paths(value: Any, path: str = "") -> Iterator[str]:
    """Where secrets sit in a wire-form value: ``spec.headGroupSpec...image``."""
    if isinstance(value, dict):
        if value.get(SIG) == SECRET_SIG:
            yield path
            return
        for key, item in value.items():
            yield from secret_paths(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from secret_paths(item, f"{path}[{index}]")


class _Monitor(MockMonitor):
    def __init__(self, mocks: pulumi.runtime.Mocks, run: Run) -> None:
        super().__init__(mocks)
        self.run = run

    def RegisterResource(self, request: Any) -> Any:
        if request.type != "pulumi:pulumi:Stack":
            self.run.registrations.append(
                Registration(
                    type=request.type,
                    name=request.name,
                    parent=request.parent,
                    dependencies=tuple(request.dependencies),
                    request=request,
                )
            )
        return super().RegisterResource(request)


class _Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        state = dict(args.inputs)
        if args.typ.startswith("kubernetes:ray.io/v1:"):
            state["status"] = STATUS[args.typ.rsplit(":", 1)[-1]]
        metadata = state.get("metadata")
        if isinstance(metadata, dict) or args.typ.startswith("kubernetes:"):
            # As the provider does: a default namespace, and a name made from the
            # resource name when the program gives none.
            given = metadata if isinstance(metadata, dict) else {}
            state["metadata"] = {"namespace": "default", "name": f"{args.name}-0a1b2c3d", **given}
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        return {}


@dataclass
class Run:
    registrations: list[Registration] = field(default_factory=list)
    value: Any = NOT_RESOLVED

    def of_type(self, type_: str) -> list[Registration]:
        return [r for r in self.registrations if r.type == type_]

    def one(self, type_: str) -> Registration:
        found = self.of_type(type_)
        assert len(found) == 1, [r.type for r in self.registrations]
        return found[0]

    @property
    def types(self) -> list[str]:
        return [r.type for r in self.registrations]


def run(program: Callable[[], Any], *, preview: bool = False, into: Run | None = None) -> Run:
    """Run ``program`` under mocks; its return value (Inputs, e.g. a dict of Outputs) is
    resolved into ``Run.value``. Exceptions, including those raised inside an ``apply``,
    propagate; pass ``into`` to see what was registered before one."""
    recorded = Run() if into is None else into
    mocks = _Mocks()
    pulumi.runtime.set_mocks(mocks, preview=preview, monitor=_Monitor(mocks, recorded))

    def body() -> Any:
        result = pulumi.Output.from_input(program())
        return result.apply(lambda resolved: setattr(recorded, "value", resolved))

    pulumi.runtime.test(body)()
    return recorded


async def _resolved(value: Any) -> Any:
    return value


def unknown() -> pulumi.Output[Any]:
    """An Output whose value is not known, as in a preview before its resource exists."""
    return pulumi.Output(set(), _resolved(None), _resolved(False))


CONTAINER: Final = {"name": "ray-head", "image": "rayproject/ray:2.52.0"}


def container(name: str = "ray-head", **fields: Any) -> dict[str, Any]:
    return {**CONTAINER, "name": name, **fields}


def cluster_spec(**overrides: Any) -> dict[str, Any]:
    """A valid RayClusterSpec in snake_case, one worker group ``gpu``."""
    spec: dict[str, Any] = {
        "ray_version": "2.52.0",
        "head_group_spec": {"template": {"spec": {"containers": [container()]}}},
        "worker_group_specs": [
            {
                "group_name": "gpu",
                "replicas": 2,
                "min_replicas": 1,
                "max_replicas": 4,
                "template": {"spec": {"containers": [container("ray-worker")]}},
            }
        ],
    }
    spec.update(overrides)
    return spec


def annotations(registration: Registration) -> Mapping[str, str]:
    annotations_: Mapping[str, str] = registration.inputs["metadata"].get("annotations", {})
    return annotations_
