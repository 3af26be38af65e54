"""The component provider, with a component's input error reported as the engine expects
one from a provider: a check failure whose message is the error's own lines.

A ``RayInputError`` is a ``pulumi.RunError``, so that a Python program prints its message
alone. Raised in a component provider, the same class is passed through the gRPC server
as an unhandled exception, and the engine prints ``Unexpected <class
'pulumi_ray._inputs.RayInputError'>: ...``. So here it becomes a
``pulumi.InputPropertiesError`` carrying the same lines, which the server answers as an
invalid-argument status and the engine prints as the resource's problem::

    ray:index:RayCluster resource 'shared' has a problem: RayCluster team-y/shared:
    spec.workerGroupSpecs[0].maxReplicas: ...; set maxReplicas >= 0 [RAYCLUSTER_NEGATIVE_REPLICAS]

(one line, wrapped here). The error is not attached to a property: the engine would add
an indented ``property ... with value ... has a problem`` line repeating the field path,
and the line that names the object, the path, the fix and the code is the whole message
already, the same in every language.

A consumer's inputs reach the component as Outputs, so the spec is mostly checked once
they resolve, inside an ``apply``: the error then surfaces when the server resolves the
component's outputs, not in its constructor, and each output is translated too.
"""

import asyncio
from typing import Any

import pulumi
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.provider import ConstructResult
from pulumi.provider.server import ComponentInitError

from .._inputs import RayInputError

__all__ = ["CheckedComponentProvider", "engine_error"]


def engine_error(error: Exception) -> Exception:
    """``error`` as the provider's server should see it: a ``RayInputError`` (wrapped in
    the SDK's ``ComponentInitError`` or not) becomes a check failure with its message;
    anything else is returned as it is."""
    inner = error.inner if isinstance(error, ComponentInitError) else error
    if isinstance(inner, RayInputError):
        # ``errors=[]``, not None: the SDK's server builds the gRPC status's details (and
        # the trailing metadata that carries them) only for a list, and fails without.
        return pulumi.InputPropertiesError(str(inner), errors=[])
    return error


async def _resolved(output: pulumi.Output[Any]) -> tuple[set[Any], Any, bool, bool]:
    """Every part of ``output`` (as the server awaits them), its error translated."""
    try:
        return (
            await output.resources(),
            await output.future(with_unknowns=True),
            await output.is_known(),
            await output.is_secret(),
        )
    except Exception as error:
        translated = engine_error(error)
        if translated is error:
            raise
        raise translated from None


def _checked(value: object) -> object:
    """``value``, an output of the component, with its error translated.

    The error is carried by the value alone: the other parts fall back to harmless
    values, so whichever part the SDK awaits first, no part's error is left unretrieved.
    """
    if not isinstance(value, pulumi.Output):
        return value
    whole = asyncio.ensure_future(_resolved(value))

    async def part(index: int, fallback: object) -> Any:
        try:
            return (await whole)[index]
        except Exception:
            return fallback

    async def checked_value() -> Any:
        return (await whole)[1]

    return pulumi.Output(
        asyncio.ensure_future(part(0, set())),
        asyncio.ensure_future(checked_value()),
        asyncio.ensure_future(part(2, True)),
        asyncio.ensure_future(part(3, False)),
    )


class CheckedComponentProvider(ComponentProvider):
    """``ComponentProvider`` whose input errors reach the engine as check failures."""

    def construct(
        self,
        name: str,
        resource_type: str,
        inputs: pulumi.Inputs,
        options: pulumi.ResourceOptions | None = None,
    ) -> ConstructResult:
        try:
            result = super().construct(name, resource_type, inputs, options)
        except Exception as error:
            translated = engine_error(error)
            if translated is error:
                raise
            raise translated from None
        return ConstructResult(
            result.urn, {key: _checked(value) for key, value in result.state.items()}
        )
