"""KubeRay's ray-operator command line, accepted as Go's flag package accepts it.

The flag list is KubeRay's ``ray-operator/main.go`` (v1.6.2 and v1.7.0 define the same
flags), controller-runtime's zap options (``--zap-*``) and its ``--kubeconfig``."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from operator_runtime.cli import build_parser, main
from operator_runtime.controllers.rendering import render_options
from operator_runtime.render.batchscheduler import SCHEDULERS
from operator_runtime.runtime.commandline import (
    KNOWN_BATCH_SCHEDULERS,
    StartupError,
    boolean,
    check_batch_scheduler,
    effective_log_level,
    go_int,
    parse_arguments,
    resolve_configuration,
    version_line,
)
from operator_runtime.runtime.configuration import OperatorConfiguration
from operator_runtime.runtime.settings import OperatorEnvironment

# Every flag of KubeRay's operator with its default, written as "--name=default".
KUBERAY_FLAGS = {
    "--metrics-addr": ":8080",
    "--health-probe-bind-address": ":8082",
    "--enable-leader-election": "true",
    "--leader-election-namespace": "",
    "--reconcile-concurrency": "1",
    "--watch-namespace": "",
    "--forced-cluster-upgrade": "false",
    "--log-file-path": "",
    "--log-file-encoder": "json",
    "--log-stdout-encoder": "json",
    "--enable-batch-scheduler": "false",
    "--batch-scheduler": "",
    "--config": "",
    "--use-kubernetes-proxy": "false",
    "--feature-gates": "",
    "--enable-metrics": "false",
    "--qps": "100",
    "--burst": "200",
    "--zap-devel": "false",
    "--zap-encoder": "json",
    "--zap-log-level": "info",
    "--zap-stacktrace-level": "error",
    "--zap-time-encoding": "iso8601",
    "--kubeconfig": "",
}


def parse(*arguments: str) -> Any:
    return parse_arguments(build_parser(), arguments)


def test_every_kuberay_flag_is_accepted_with_its_default() -> None:
    for flag, default in KUBERAY_FLAGS.items():
        parse(f"{flag}={default}")  # exits 2 on an unknown flag or a bad value
        parse(f"-{flag.lstrip('-')}={default}")  # Go's single-dash spelling
    help_text = build_parser().format_help()
    assert all(flag in help_text for flag in KUBERAY_FLAGS)


def test_defaults_are_kuberays() -> None:
    args = parse()
    config = resolve_configuration(args)
    assert config == OperatorConfiguration()
    assert (config.metrics_addr, config.probe_addr) == (":8080", ":8082")
    assert (config.qps, config.burst, config.reconcile_concurrency) == (100.0, 200, 1)
    assert config.enable_leader_election is True
    assert config.enable_metrics is False
    assert config.use_kubernetes_proxy is False
    assert (args.log_stdout_encoder, args.log_file_encoder) == ("json", "json")
    assert args.leader_election_id == "ray-operator-leader"


@pytest.mark.parametrize(
    ("spelling", "expected"),
    [
        (["--enable-metrics"], True),
        (["--enable-metrics=true"], True),
        (["--enable-metrics=True"], True),
        (["--enable-metrics=TRUE"], True),
        (["--enable-metrics=t"], True),
        (["--enable-metrics=1"], True),
        (["-enable-metrics"], True),
        (["--enable-metrics=false"], False),
        (["--enable-metrics=F"], False),
        (["--enable-metrics=0"], False),
        (["--enable-metrics=true", "--enable-metrics=false"], False),  # the last one wins
    ],
)
def test_go_booleans(spelling: list[str], expected: bool) -> None:
    assert parse(*spelling).enable_metrics is expected


@pytest.mark.parametrize("bad", ["yes", "on", "tRUE", "2", ""])
def test_what_go_refuses_as_a_boolean_is_refused(bad: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        boolean(bad)
    with pytest.raises(SystemExit) as exited:
        parse(f"--enable-leader-election={bad}")
    assert exited.value.code == 2


def test_go_integers_and_floats() -> None:
    assert go_int("010") == 8  # Go's base 0: a leading zero is octal
    assert go_int("0x10") == 16
    assert go_int("1_000") == 1000
    assert go_int("-3") == -3
    for bad in ("1.5", " 1", "", "abc", "9223372036854775808"):
        with pytest.raises(argparse.ArgumentTypeError):
            go_int(bad)
    args = parse("--reconcile-concurrency=0x4", "--qps=1e3", "--burst", "300")
    assert (args.reconcile_concurrency, args.qps, args.burst) == (4, 1000.0, 300)
    with pytest.raises(SystemExit):
        parse("--qps=1_000")


def test_string_flags_take_both_forms() -> None:
    args = parse("--watch-namespace", "a,b", "-log-file-path=/tmp/x.log", "--burst", "5")
    assert resolve_configuration(args).watch_namespace == "a,b"
    assert (args.log_file_path, args.burst) == ("/tmp/x.log", 5)
    assert parse("--config", "c.yaml").config == parse("-config=c.yaml").config == "c.yaml"


def test_encoders_are_checked_as_kuberay_does() -> None:
    with pytest.raises(SystemExit):
        parse("--log-stdout-encoder=text")
    with pytest.raises(SystemExit):
        parse("--log-file-encoder=JSON")  # KubeRay compares exactly
    assert parse("--zap-encoder=CONSOLE").zap_encoder == "console"  # zap lowers the case


def test_zap_levels() -> None:
    assert effective_log_level(parse()) == "info"
    assert effective_log_level(parse("--zap-log-level=debug")) == "debug"
    assert effective_log_level(parse("--zap-log-level=ERROR")) == "error"
    assert effective_log_level(parse("--zap-log-level=panic")) == "critical"
    assert effective_log_level(parse("--zap-log-level=3")) == "debug"
    assert effective_log_level(parse("--zap-devel")) == "debug"
    assert effective_log_level(parse("--zap-devel", "--zap-log-level=info")) == "info"
    assert effective_log_level(parse("--log-level=warning")) == "warning"
    for bad in ("warn", "0", "-1", "verbose"):
        with pytest.raises(SystemExit):
            parse(f"--zap-log-level={bad}")
    with pytest.raises(SystemExit):
        parse("--zap-stacktrace-level=debug")
    with pytest.raises(SystemExit):
        parse("--zap-time-encoding=nano")  # zap's help says nano; its parser wants nanos
    assert parse("--zap-time-encoding=nanos").zap_time_encoding == "nanos"


def test_our_own_flags_still_work() -> None:
    args = parse(
        "--leader-election-id=x", "--shutdown-timeout=5", "--log-level=error",
        "--controllers=raycluster", "--controller-plugin=m:f", "--watch-namespace=a",
        "--watch-namespace=b",
    )  # fmt: skip
    assert (args.leader_election_id, args.shutdown_timeout) == ("x", 5.0)
    assert resolve_configuration(args).watch_namespace == "a,b"


def config(**fields: Any) -> OperatorConfiguration:
    return OperatorConfiguration(**fields)


def test_kuberays_batch_schedulers_are_accepted_and_the_rest_refused_with_one_line() -> None:
    for name in ("", *KNOWN_BATCH_SCHEDULERS):
        check_batch_scheduler(config(batch_scheduler=name), kubernetes_was=False)
    check_batch_scheduler(config(enable_batch_scheduler=True), kubernetes_was=False)
    check_batch_scheduler(config(), kubernetes_was=True)
    # Pairs, not a dict: a configuration holds dicts (sidecars, cleanup resources), so it
    # has no hash.
    cases = [
        (config(batch_scheduler="nope"), "scheduler is not supported, name=nope"),
        (config(batch_scheduler="Volcano"), "scheduler is not supported, name=Volcano"),
        (
            config(enable_batch_scheduler=True, batch_scheduler="volcano"),
            "use --batch-scheduler only",
        ),
    ]
    for given, message in cases:
        with pytest.raises(StartupError, match=message) as refused:
            check_batch_scheduler(given, kubernetes_was=False)
        assert "\n" not in str(refused.value) and refused.value.code == 1
    with pytest.raises(StartupError, match="KubernetesWAS feature gate cannot be combined"):
        check_batch_scheduler(config(batch_scheduler="volcano"), kubernetes_was=True)
    with pytest.raises(StartupError, match="KubernetesWAS feature gate cannot be combined"):
        check_batch_scheduler(config(enable_batch_scheduler=True), kubernetes_was=True)


def test_the_flag_list_is_the_renderers_list() -> None:
    assert KNOWN_BATCH_SCHEDULERS == SCHEDULERS


@pytest.mark.parametrize(
    ("flags", "chosen"),
    [
        ([], ""),
        (["--enable-batch-scheduler"], "volcano"),
        *[([f"--batch-scheduler={name}"], name) for name in SCHEDULERS],
    ],
)
def test_the_flags_choose_the_scheduler_every_controller_renders_with(
    flags: list[str], chosen: str
) -> None:
    configuration = resolve_configuration(parse_arguments(build_parser(), flags))
    check_batch_scheduler(configuration, kubernetes_was=False)
    options = render_options(OperatorEnvironment(), configuration=configuration)
    assert options.batch_scheduler == chosen


@pytest.mark.parametrize("flag", ["--batch-scheduler=volcano", "--enable-batch-scheduler"])
def test_main_gets_past_the_batch_scheduler_flags(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Accepted at start: the operator goes on to its kubeconfig (missing here)."""
    assert main([flag, "--kubeconfig=/does/not/exist"]) == 1
    assert capsys.readouterr().err == "ray-operator: kubeconfig /does/not/exist: no such file\n"


def test_main_refuses_an_unknown_batch_scheduler_before_touching_a_cluster(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--batch-scheduler=slurm", "--kubeconfig=/does/not/exist"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ray-operator: --batch-scheduler: scheduler is not supported")
    assert err.count("\n") == 1


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out == version_line() + "\n"
    assert out.startswith("ray-operator ") and "KubeRay v1.7.0" in out


def test_a_missing_kubeconfig_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--kubeconfig=/does/not/exist"]) == 1
    assert capsys.readouterr().err == "ray-operator: kubeconfig /does/not/exist: no such file\n"
