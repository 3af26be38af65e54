"""The committed CRD files (operator_runtime/api/crds), parsed once per test process.

They are megabytes of YAML: PyYAML's pure-Python parser took 3 to 6 s a file on a loaded
machine, so modules that parsed a file per test case spent most of their time there.
libyaml parses one in a few tenths of a second, and each file is parsed once."""

from __future__ import annotations

import functools
from typing import Any

import yaml

from operator_runtime.api import crds


@functools.cache
def _committed(file_name: str) -> dict[str, Any]:
    text = (crds.CRD_DIR / file_name).read_text(encoding="utf-8")
    manifest: dict[str, Any] = yaml.load(text, Loader=yaml.CSafeLoader)
    return manifest


def committed_schema(file_name: str) -> dict[str, Any]:
    """The openAPIV3Schema of ``api/crds/<file_name>``. Shared between tests: read it,
    never modify it."""
    schema: dict[str, Any] = _committed(file_name)["spec"]["versions"][0]["schema"][
        "openAPIV3Schema"
    ]
    return schema
