"""Smoke test of ``python -m benchmarks.scale``: a small run (2 RayClusters x 5 workers,
fairness with 10, each fairness figure from one run, not the median of 3) of our operator,
KubeRay's and the plain-client ceiling completes and prints its side-by-side table. No
timing is asserted: the figures are the benchmark's business (benchmarks/README.md), not a
test's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
FAIRNESS_WORKERS = 10


@pytest.mark.timeout(900)
def test_scale_benchmark_completes_and_prints_the_table(tmp_path: Path) -> None:
    report = tmp_path / "scale.json"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.scale", "--clusters=2", "--workers=5",
         f"--fairness-workers={FAIRNESS_WORKERS}", "--fairness-runs=1", "--timeout=300",
         f"--json={report}"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=840,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("metric "))
    assert "ours/KubeRay" in header and "ours/ceiling" in header, result.stdout
    fairness_row = f"1-worker cluster during 0->{FAIRNESS_WORKERS}, s"
    for row in ("time to all ready, s", "pods created / s", "operator peak RSS, MiB",
                "time to delete all, s", fairness_row):  # fmt: skip
        assert any(line.startswith(row) for line in lines), f"no {row!r} row:\n{result.stdout}"
    for row in ("  operator's reconciles, delete", "ours' passes by trigger, to ready: "):
        assert any(line.startswith(row) for line in lines), f"no {row!r} row:\n{result.stdout}"
    assert "[ours]" in result.stderr and "[kuberay]" in result.stderr, "no progress lines"
    assert report.exists()
