"""``Refusal``: one refused argument, raised inside the checks and turned into a
``RayInputError`` by ``checks.settle``, so every check names the argument the same way."""

from __future__ import annotations

__all__ = ["Refusal"]


class Refusal(Exception):
    """One refused argument: its name, what is wrong, the fix, a stable code."""

    def __init__(self, path: str, detail: str, hint: str, code: str) -> None:
        super().__init__(detail)
        self.path, self.detail, self.hint, self.code = path, detail, hint, code
