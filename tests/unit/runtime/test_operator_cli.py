"""The operator's command line."""

from __future__ import annotations

import pytest

from operator_runtime.cli import _namespaces, build_parser, build_registry, main

FLAGS = (
    "--kubeconfig", "--watch-namespace", "--feature-gates", "--qps", "--burst",
    "--reconcile-concurrency", "--enable-leader-election", "--leader-election-namespace",
    "--leader-election-id", "--metrics-addr", "--health-probe-bind-address",
    "--log-stdout-encoder", "--log-file-path", "--log-level",
)  # fmt: skip


def test_help_documents_every_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    for flag in FLAGS:
        assert flag in text


def test_defaults_match_kuberay() -> None:
    args = build_parser().parse_args([])
    assert (args.qps, args.burst, args.reconcile_concurrency) == (100.0, 200, 1)
    assert args.enable_leader_election is True
    assert args.leader_election_id == "ray-operator-leader"
    assert (args.metrics_addr, args.health_probe_bind_address) == (":8080", ":8082")


def test_go_style_booleans_and_repeatable_namespaces() -> None:
    args = build_parser().parse_args(
        ["--enable-leader-election=false", "--watch-namespace", "a,b", "--watch-namespace=c"]
    )
    assert args.enable_leader_election is False
    assert _namespaces(args.watch_namespace) == ("a", "b", "c")


def test_a_bad_feature_gate_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--feature-gates", "NoSuchGate=true", "--log-level", "error"]) == 2
    assert "NoSuchGate" in capsys.readouterr().err


def test_plugins_add_controllers_to_the_registry() -> None:
    registry = build_registry(["tests.unit.runtime.plugin_for_tests:register"])
    assert "noop" in registry.names()
    with pytest.raises(ValueError, match="module:function"):
        build_registry(["no-colon"])


def test_controllers_can_be_selected_by_name() -> None:
    registry = build_registry(["tests.unit.runtime.plugin_for_tests:register"])
    assert [c.name for c in registry.build(None, ["noop"])] == ["noop"]  # type: ignore[arg-type]
    assert registry.build(None, []) == []  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown controllers"):
        registry.build(None, ["nope"])  # type: ignore[arg-type]


def test_controllers_flag_takes_a_comma_separated_list() -> None:
    args = build_parser().parse_args(["--controllers=copier,noop"])
    assert args.controllers == "copier,noop"
