"""Smoke test of ``python -m benchmarks.workloads_scale``: a small run (2 RayJobs and 2
RayServices, the idle figure from one run, not the median of 3, the subjects at the same
time on their own control planes, not one after the other) of our operator, KubeRay's
and the ceiling (a plain client, no operator) completes, prints the side-by-side
tables, and every figure was reached by every subject (the benchmark fails on a wait
that never ends, so a figure present is a figure reached). No timing is asserted: the
figures are the benchmark's business (benchmarks/README.md), not a test's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
COUNT = 2
FIGURES = (
    "clusters_ready_seconds", "reached_seconds", "api_requests_total", "operator_requests",
    "operator_reconciles", "cpu_seconds_to_reached", "peak_rss_bytes", "delete_seconds",
    "small_idle_seconds", "small_busy_seconds", "small_mid_seconds",
)  # fmt: skip
CEILING_FIGURES = ("clusters_ready_seconds", "reached_seconds", "api_requests_total",
                   "delete_seconds", "small_idle_seconds", "small_busy_seconds",
                   "small_mid_seconds")  # fmt: skip


@pytest.mark.timeout(600)
def test_workloads_benchmark_reaches_every_figure_for_both_operators(tmp_path: Path) -> None:
    report = tmp_path / "workloads.json"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.workloads_scale", f"--rayjobs={COUNT}",
         f"--rayservices={COUNT}", "--idle-runs=1", "--concurrent", "--timeout=240",
         "--only=ours,kuberay,ceiling",
         f"--json={report}"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=560,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    lines = result.stdout.splitlines()
    for title in (f"{COUNT} RayJobs created at once", f"{COUNT} RayServices created at once"):
        assert title in lines, result.stdout
    headers = [line for line in lines if line.startswith("metric ")]
    assert len(headers) == 2, result.stdout
    assert all("ours/KubeRay" in h and "ours/ceiling" in h for h in headers), result.stdout
    for row in ("time to all clusters ready, s", "time to all submissions attempted, s",
                "time to all head Services, s", "operator peak RSS, MiB",
                "time to delete all, s", "1-worker cluster during the burst, s",
                "1-worker cluster, halfway through, s"):  # fmt: skip
        assert any(line.startswith(row) for line in lines), f"no {row!r} row:\n{result.stdout}"

    results = json.loads(report.read_text())["results"]
    assert set(results) == {"ours", "kuberay", "ceiling"}
    for key, phases in results.items():
        assert set(phases) == {"rayjobs", "rayservices"}, key
        figures = CEILING_FIGURES if key == "ceiling" else FIGURES
        for kind, values in phases.items():
            missing = [
                figure for figure in figures if not isinstance(values.get(figure), int | float)
            ]
            assert not missing, f"{key} {kind}: no {missing} in {values}"
            assert values["count"] == COUNT
            if key != "ceiling":
                assert values["peak_rss_bytes"] > 0 and values["operator_reconciles"] > 0
        # Both stop where the operator's part ends on kwok: every RayJob past its
        # submission (Running; Failed once kwok's submitter finished 30 s before and no
        # job info came), no RayService with its own Services (no Serve app).
        statuses = phases["rayjobs"]["statuses"]
        assert set(statuses) <= {"Running", "Failed"}, (key, statuses)
        assert sum(statuses.values()) == COUNT, (key, statuses)
        assert phases["rayservices"]["own_services"] == 0, (key, phases["rayservices"])
