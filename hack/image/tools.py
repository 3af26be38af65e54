"""The Go commands the image's release steps and tests run besides ``ocitool``: each
built once from a wrapper module whose committed go.mod/go.sum pin it (``syftmod/``,
``cosignmod/``), into the cache ``make image`` fills, so the sandboxed tests find it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hack import gobuild
from hack.image.oci import FAMILY

__all__ = ["PinnedTool"]


@dataclass(frozen=True)
class PinnedTool:
    """One command of one module at one version, as its wrapper module pins it."""

    name: str
    """The binary's name, and the cache directory's prefix."""
    wrapper: Path
    """The wrapper module's directory (go.mod, go.sum and a tools.go importing ``package``)."""
    module: str
    version: str
    """What the wrapper's go.mod requires (tests/unit/test_image_pins.py holds them together)."""
    package: str
    """The command's import path, under ``module``."""
    recipe_revision: int
    """Raised when the build's recipe changes, so the cache builds afresh."""
    expected: str
    """How long a first build takes, for the progress line."""

    def _built(self) -> gobuild.Built:
        digest = gobuild.wrapper_digest(
            self.wrapper.parent, [self.wrapper.name], f"recipe {self.recipe_revision}"
        )
        return gobuild.Built(
            root=gobuild.cache_root() / FAMILY / f"{self.name}-{digest}", binaries=(self.name,)
        )

    def binary(self) -> Path:
        """The built command, built now if the cache lacks it (outside the sandbox)."""

        def build(bin_dir: Path) -> None:
            gobuild.run_go(
                FAMILY,
                f"go build {self.name}",
                ["build", "-trimpath", "-ldflags", "-s -w", "-o", str(bin_dir / self.name),
                 self.package],
                self.wrapper,
            )  # fmt: skip

        built = gobuild.ensure(
            self._built(),
            family=FAMILY,
            build=build,
            versions_text=(
                f"{self.module} {self.version} (hack/image/{self.wrapper.name}/go.mod)\n"
            ),
            make_target="image",
            expected=self.expected,
        )
        return built.path(self.name)
