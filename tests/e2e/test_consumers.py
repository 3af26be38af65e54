"""The quickstart in YAML, TypeScript and Go, through the real engine on the local control
plane, registers what the Python quickstart does (issue 28).

Each program's ``ray:index:*`` components are constructed by our component provider, run
as the executable plugin ``pulumi-resource-ray`` (hack/pulumi/componentplugin.py), named
in the program's ``plugins.providers``; the TypeScript and Go programs go through the
SDKs generated from components/schema.json, run by the Node.js (v3.68) and Go (v3.66)
language hosts. One comparison for every language: the same child resources, with the
same type chains (so the same parents), names and inputs as the Python quickstart's
preview, both as committed and with the same config.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.stacks import Plan, ProgramStack, assert_registers_what_python_does, preview_plan
from tests.examples import CONFIG, EXAMPLES, SDK_EXAMPLES, YAML_EXAMPLES

# The first preview of a session pays the Python reference's preview and the SDKs'
# generation too, and the Go host builds the program (seconds warm): all on two shared
# cores.
pytestmark = pytest.mark.timeout(1200)

CONSUMERS = {**YAML_EXAMPLES, **SDK_EXAMPLES}


@pytest.mark.parametrize("example", sorted(CONSUMERS))
def test_the_quickstart_registers_what_the_python_one_does(
    example: str,
    program_stack: Callable[..., ProgramStack],
    python_plan: Callable[[str], tuple[Plan, float]],
) -> None:
    python_example = CONSUMERS[example]
    reference, python_seconds = python_plan(python_example)
    program = program_stack(example=EXAMPLES / example)
    for key, value in CONFIG[example].items():
        program.set_config(key, value)
    plan, seconds = preview_plan(program)
    children = assert_registers_what_python_does(plan, reference)
    print(
        f"preview of {example}: {seconds:.1f} s, of {python_example}: {python_seconds:.1f} s "
        f"({children} child resources each)"
    )
