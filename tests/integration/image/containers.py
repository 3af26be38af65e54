"""Running one command in a container of a built image to its end (``hack/image/run.py``),
as the image tests of the Ray and Redis images do."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hack.image.run import ContainerRun, launch


@dataclass(frozen=True)
class Ran:
    returncode: int
    output: str


def run_to_end(container: ContainerRun, directory: Path, name: str, timeout: float) -> Ran:
    """Run ``container`` until it exits (killed after ``timeout`` seconds, which then
    raises); its exit code and its output, kept in ``directory`` as ``NAME.log``."""
    log = directory / f"{name}.log"
    with log.open("wb") as output:
        process = launch(container, directory / f"{name}.json", output)
        try:
            returncode = process.wait(timeout=timeout)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    return Ran(returncode, log.read_text(errors="replace"))
