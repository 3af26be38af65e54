"""``python -m pulumi_ray render``: a program or a manifest -> what the operator creates.

The tests call each CLI's ``main`` in this process with its streams captured (a
subprocess costs a second of interpreter start and imports a call). One test per CLI
runs the real entry point as a subprocess: ``python -m pulumi_ray`` (also showing that
a program's own print stays off stdout) and ``python -m operator_runtime render``.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi.runtime.rpc
import pytest
import yaml

from components import _program
from components.__main__ import main
from operator_runtime.controllers.rendercli import main as render_main

REPO = Path(__file__).resolve().parents[2]
MINIMAL = REPO / "examples" / "manifests" / "raycluster-minimal.yaml"

CUSTOM_RESOURCE_PROGRAM = """
import pulumi
from pulumi_kubernetes.apiextensions import CustomResource

config = pulumi.Config()
replicas = config.get_int("replicas") or 1
print("the program's own print goes to stderr")

def container(name):
    resources = {"cpu": "1", "memory": "2Gi"}
    return {"name": name, "image": "rayproject/ray:2.52.0",
            "resources": {"requests": resources, "limits": resources}}

CustomResource(
    "demo",
    api_version="ray.io/v1",
    kind="RayCluster",
    metadata={"name": "demo", "namespace": "team"},
    spec={
        "rayVersion": "2.52.0",
        "headGroupSpec": {"rayStartParams": {},
                          "template": {"spec": {"containers": [container("ray-head")]}}},
        "workerGroupSpecs": [{
            "groupName": "small", "replicas": replicas, "minReplicas": 0, "maxReplicas": 5,
            "rayStartParams": {},
            "template": {"spec": {"containers": [container("ray-worker")]}},
        }],
    },
)
"""


def write_program(directory: Path, source: str, *, config: str = "", **files: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    project = f"name: {directory.name}\nruntime: python\n" + config
    (directory / "Pulumi.yaml").write_text(project)
    (directory / "__main__.py").write_text(textwrap.dedent(source))
    for name, text in files.items():
        (directory / name).write_text(textwrap.dedent(text))
    return directory


def in_process(entry: Callable[..., int], *args: object) -> subprocess.CompletedProcess[str]:
    """A CLI's ``main(argv, stdout=, stderr=)`` run in this process, with the shape of a
    finished subprocess. A program's prints go to ``sys.stderr`` (stdout is the YAML), so
    that is captured with ``main``'s stderr."""
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = entry(argv, stdout=out, stderr=err)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def cli(*args: object) -> subprocess.CompletedProcess[str]:
    """``python -m pulumi_ray ARGS`` in this process."""
    return in_process(main, *args)


def cli_process(*args: object) -> subprocess.CompletedProcess[str]:
    """``python -m pulumi_ray ARGS`` as a real process."""
    command = [sys.executable, "-m", "pulumi_ray", *(str(a) for a in args)]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)


def operator_render(*args: object) -> subprocess.CompletedProcess[str]:
    """``python -m operator_runtime render ARGS`` in this process."""
    return in_process(render_main, *args)


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def kinds(text: str) -> Counter[str]:
    return Counter(d["kind"] for d in documents(text))


def test_a_program_with_a_raycluster_custom_resource_renders_its_objects(
    tmp_path: Path,
) -> None:
    program = write_program(tmp_path / "prog", CUSTOM_RESOURCE_PROGRAM)
    result = cli_process("render", program)
    assert result.returncode == 0, result.stderr
    assert result.stdout == cli("render", program).stdout
    assert kinds(result.stdout) == {"Pod": 2, "Service": 1}
    pods = [d for d in documents(result.stdout) if d["kind"] == "Pod"]
    assert [p["metadata"]["generateName"] for p in pods] == ["demo-head-", "demo-small-worker-"]
    assert {p["metadata"]["namespace"] for p in pods} == {"team"}
    assert result.stdout.count('# from RayCluster team/demo (resource "demo")\n') == 3
    # A print in the program must not corrupt the YAML on stdout.
    assert "own print" in result.stderr and "own print" not in result.stdout


def test_the_component_renders_like_the_manifest_it_applies(tmp_path: Path) -> None:
    program = write_program(
        tmp_path / "prog",
        """
        import pathlib

        import yaml
        from components import RayCluster

        manifest = yaml.safe_load(pathlib.Path(MINIMAL).read_text())
        RayCluster("minimal", name="raycluster-minimal", wait_for_ready=False,
                   **manifest["spec"])
        """.replace("MINIMAL", repr(str(MINIMAL))),
    )
    from_program = cli("render", program)
    from_manifest = cli("render", MINIMAL)
    assert from_program.returncode == 0, from_program.stderr
    # The same objects (the component sends the spec with its keys in its own order).
    assert from_program.stdout.replace(' (resource "minimal")', "") == from_manifest.stdout
    assert '# from RayCluster default/raycluster-minimal (resource "minimal")' in (
        from_program.stdout
    )


def test_a_manifest_applied_with_configfile_renders_as_the_manifest(tmp_path: Path) -> None:
    # ConfigFile parses its YAML through the provider (an invoke the mocks answer).
    program = write_program(
        tmp_path / "prog",
        f"""
        import pulumi_kubernetes as k8s

        k8s.yaml.ConfigFile("m", file={str(MINIMAL)!r})
        """,
    )
    result = cli("render", program)
    assert result.returncode == 0, result.stderr
    assert result.stdout.replace(' (resource "raycluster-minimal")', "") == (
        cli("render", MINIMAL).stdout
    )


def canonical(objects: list[dict[str, Any]]) -> Counter[str]:
    return Counter(json.dumps(o, sort_keys=True) for o in objects)


@pytest.mark.parametrize("manifest", ["raycluster-minimal.yaml", "raycluster-gcs-ft-redis.yaml"])
def test_a_manifest_renders_what_the_operator_render_command_renders(manifest: str) -> None:
    path = REPO / "examples" / "manifests" / manifest
    ours = cli("render", path)
    operators = operator_render(path)
    assert ours.returncode == 0, ours.stderr
    assert operators.returncode == 0, operators.stderr
    expected = documents(operators.stdout)
    assert expected and canonical(documents(ours.stdout)) == canonical(expected)


def test_diff_of_two_programs_differing_in_replicas_shows_only_the_new_pods(
    tmp_path: Path,
) -> None:
    one = write_program(tmp_path / "one", CUSTOM_RESOURCE_PROGRAM)
    three = write_program(
        tmp_path / "three", CUSTOM_RESOURCE_PROGRAM, config="config:\n  replicas: 3\n"
    )
    before, after = cli("render", one).stdout, cli("render", three).stdout
    result = cli("render", one, "--diff", three)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == [f"--- {one}", f"+++ {three}"]
    removed = [line for line in lines[2:] if line.startswith("-")]
    added = [line[1:] for line in lines[2:] if line.startswith("+")]
    assert removed == []
    # Exactly two more worker pods, replica indexes 1 and 2: every added line is one of
    # theirs (a line diff may cut the inserted block at another line of a similar pod).
    new_pods = [
        chunk
        for chunk in after.split("---\n")
        if "kind: Pod" in chunk and re.search(r"replica-index: '[12]'", chunk)
    ]
    assert len(new_pods) == 2
    assert Counter(added) == Counter(
        line for chunk in new_pods for line in ["---", *chunk.splitlines()]
    )
    assert len(after.splitlines()) - len(before.splitlines()) == len(added)
    assert cli("render", one, "--diff", one).stdout == ""


def test_stack_config_comes_from_the_stack_file(tmp_path: Path) -> None:
    program = write_program(tmp_path / "prog", CUSTOM_RESOURCE_PROGRAM)
    (program / "Pulumi.dev.yaml").write_text("config:\n  prog:replicas: '2'\n")
    assert kinds(cli("render", program).stdout)["Pod"] == 2
    assert kinds(cli("render", program, "--stack", "dev").stdout)["Pod"] == 3
    missing = cli("render", program, "--stack", "prod")
    assert missing.returncode == 2 and "Pulumi.prod.yaml" in missing.stderr


def test_a_component_input_error_is_one_message_and_exit_2(tmp_path: Path) -> None:
    program = write_program(
        tmp_path / "bad",
        """
        from components import RayCluster

        head = {"template": {"spec": {"containers": [{"name": "h", "image": "ray"}]}}}
        worker = {"group_name": "gpu", "replicas": 1, "min_replicas": 3, "max_replicas": 1,
                  "template": {"spec": {"containers": [{"name": "w", "image": "ray"}]}}}
        RayCluster("bad", head_group_spec=head, worker_group_specs=[worker])
        """,
    )
    result = cli("render", program)
    assert result.returncode == 2 and result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(f"render: {program}: RayCluster ")
    assert "minReplicas" in result.stderr and "; set minReplicas <= maxReplicas" in result.stderr


def test_any_other_program_error_names_its_line_without_a_traceback(tmp_path: Path) -> None:
    program = write_program(tmp_path / "broken", "import pulumi\n\nraise ValueError('no!')\n")
    result = cli("render", program)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr == f"render: {program}: ValueError: no! (at __main__.py:3)\n"


def test_an_invalid_custom_resource_is_exit_1(tmp_path: Path) -> None:
    source = CUSTOM_RESOURCE_PROGRAM.replace('"minReplicas": 0', '"minReplicas": 9')
    result = cli("render", write_program(tmp_path / "prog", source))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines()[-1].startswith("render: RayCluster team/demo: ")
    assert "minReplicas" in result.stderr


def test_unknown_and_secret_values_are_placeholders(tmp_path: Path) -> None:
    source = CUSTOM_RESOURCE_PROGRAM.replace(
        'metadata={"name": "demo", "namespace": "team"}',
        'metadata={"namespace": "team", "labels": {"ns-phase": ns.status.apply(str)}}',
    ).replace(
        '"rayStartParams": {},\n                          "template"',
        '"rayStartParams": {"node-manager-port": pulumi.Output.secret("7777")},\n'
        '                          "template"',
    )
    source = source.replace(
        "config = pulumi.Config()",
        "import pulumi_kubernetes as k8s\nns = k8s.core.v1.Namespace('team')\n"
        "config = pulumi.Config()",
    )
    result = cli("render", write_program(tmp_path / "prog", source))
    assert result.returncode == 0, result.stderr
    assert "7777" not in result.stdout and "--node-manager-port=<secret>" in result.stdout
    head = documents(result.stdout)[0]
    # No metadata.name: pulumi-kubernetes autonames the custom resource.
    assert head["metadata"]["generateName"] == "demo-<autonamed>-head-"
    header = result.stdout.split("---", 1)[0]
    assert "# <secret>: " in header and "# <autonamed>: " in header
    # The unknown label of the RayCluster is not copied to its pods; it still counts.
    assert "# <unknown>: " in header


def test_an_unknown_number_is_a_note_not_an_error(tmp_path: Path) -> None:
    # replicas from a value a preview does not know: the stand-in is not a number, and
    # like `pulumi preview` the render must not fail on it.
    source = CUSTOM_RESOURCE_PROGRAM.replace(
        "replicas = config.get_int", "replicas = ns.status.apply(lambda _: 2) or config.get_int"
    ).replace(
        "config = pulumi.Config()",
        "import pulumi_kubernetes as k8s\nns = k8s.core.v1.Namespace('team')\n"
        "config = pulumi.Config()",
    )
    result = cli("render", write_program(tmp_path / "prog", source))
    assert result.returncode == 0, result.stderr
    assert documents(result.stdout) == []
    note = next(line for line in result.stdout.splitlines() if "RayCluster team/demo" in line)
    assert "replicas" in note and "<unknown>" in note and "not rendered" in note


def test_a_rayjob_renders_its_cluster_head_service_and_submitter_job() -> None:
    result = cli("render", REPO / "examples" / "manifests" / "rayjob.yaml")
    assert result.returncode == 0, result.stderr
    names = {(d["kind"], d["metadata"].get("name")) for d in documents(result.stdout)}
    assert {
        ("RayCluster", "rayjob-sample-xxxxx"),
        ("Service", "rayjob-sample-xxxxx-head-svc"),
        ("Service", "rayjob-sample-head-svc"),
        ("Job", "rayjob-sample"),
    } <= names
    assert "# RayJob default/rayjob-sample: the RayCluster is named rayjob-sample-<rand5>" in (
        result.stdout
    )


def test_the_operator_render_command_prints_a_rayjobs_objects() -> None:
    command = [sys.executable, "-m", "operator_runtime", "render"]
    manifest = REPO / "examples" / "manifests" / "rayjob.yaml"
    result = subprocess.run(
        [*command, str(manifest)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    kinds_in_order = [d["kind"] for d in documents(result.stdout)]
    assert kinds_in_order[0] == "RayCluster" and kinds_in_order[-2:] == ["Service", "Job"]
    assert "'xxxxx'" in result.stderr


def test_the_same_input_gives_the_same_bytes(tmp_path: Path) -> None:
    source = CUSTOM_RESOURCE_PROGRAM + textwrap.dedent(
        """
        # A second cluster declared first in another namespace: output order is by
        # kind/namespace/name, not by declaration or registration order.
        CustomResource("alpha", api_version="ray.io/v1", kind="RayCluster",
                       metadata={"name": "alpha", "namespace": "aaa"},
                       spec={"headGroupSpec": {"template": {"spec": {"containers": [
                           container("ray-head")]}}}})
        """
    )
    program = write_program(tmp_path / "prog", source)
    first, second = cli("render", program), cli("render", program)
    assert first.returncode == 0, first.stderr
    assert first.stdout.encode() == second.stdout.encode()
    keys = [
        (d["kind"], d["metadata"]["namespace"], d["metadata"].get("name", ""))
        for d in documents(first.stdout)
    ]
    assert keys == sorted(keys) and ("Service", "aaa", "alpha-head-svc") in keys


def test_two_programs_in_one_process_each_import_their_own_modules(tmp_path: Path) -> None:
    # Same module name, different values: the second run must not reuse the first's.
    source = CUSTOM_RESOURCE_PROGRAM.replace(
        "replicas = config.get_int", "import helper\nreplicas = helper.REPLICAS or config.get_int"
    )
    one = write_program(tmp_path / "one", source, **{"helper.py": "REPLICAS = 1\n"})
    two = write_program(tmp_path / "two", source, **{"helper.py": "REPLICAS = 2\n"})
    out, err = io.StringIO(), io.StringIO()
    cwd, path = Path.cwd(), list(sys.path)
    assert main(["render", str(one), "--diff", str(two)], stdout=out, stderr=err) == 0
    assert "+kind: Pod" in out.getvalue() and "-kind: Pod" not in out.getvalue()
    assert Path.cwd() == cwd and sys.path == path and "helper" not in sys.modules


def test_the_wire_protocol_constants_are_pulumis() -> None:
    rpc: Any = pulumi.runtime.rpc
    assert _program.UNKNOWN == rpc.UNKNOWN
    assert rpc._special_sig_key == _program.SIG
    assert rpc._special_secret_sig == _program.SECRET_SIG


def test_a_manifest_with_another_kind_or_bad_yaml_is_refused(tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(["render", str(mixed)], stdout=out, stderr=err) == 2
    assert "kind 'ConfigMap' cannot be rendered" in err.getvalue() and out.getvalue() == ""
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: RayCluster\nmetadata:\n  labels: a: b\n")
    err = io.StringIO()
    assert main(["render", str(broken)], stdout=out, stderr=err) == 2
    assert f"{broken}:3:12: mapping values are not allowed in this context" in err.getvalue()
