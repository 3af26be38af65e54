"""Logging set-up for the operator process: JSON or console lines on stdout, and an
optional rotating log file (500 MB x 10, KubeRay's lumberjack settings).

Reconcile log records carry ``controller``, ``key`` and ``reconcile_id`` as extras;
both encoders print them, so every line about an object can be found by its key.
"""

from __future__ import annotations

import datetime
import json
import logging
import logging.handlers
import sys
from typing import Literal

Encoder = Literal["json", "console"]
_CONTEXT_FIELDS = ("controller", "key", "reconcile_id")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name in _CONTEXT_FIELDS:
            if hasattr(record, name):
                entry[name] = getattr(record, name)
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry)


class ConsoleFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        context = " ".join(
            f"{name}={getattr(record, name)}" for name in _CONTEXT_FIELDS if hasattr(record, name)
        )
        return f"{line} [{context}]" if context and "\n" not in line else line


def _formatter(encoder: Encoder) -> logging.Formatter:
    return JsonFormatter() if encoder == "json" else ConsoleFormatter()


def configure_logging(
    *,
    level: str = "info",
    stdout_encoder: Encoder = "json",
    file_path: str | None = None,
    file_encoder: Encoder = "json",
    max_bytes: int = 500 * 1024 * 1024,
    backups: int = 10,
) -> None:
    """Configure the root logger (called once, by ``main``)."""
    root = logging.getLogger()
    root.handlers.clear()
    root.setLevel(level.upper())
    stdout = logging.StreamHandler(sys.stdout)
    stdout.setFormatter(_formatter(stdout_encoder))
    root.addHandler(stdout)
    if file_path:
        rotating = logging.handlers.RotatingFileHandler(
            file_path, maxBytes=max_bytes, backupCount=backups
        )
        rotating.setFormatter(_formatter(file_encoder))
        root.addHandler(rotating)
    # urllib3 logs every retry and dropped connection at WARNING: noise during a watch
    # reconnect that our own informer log already explains.
    logging.getLogger("urllib3").setLevel(logging.ERROR)
    # httpx logs every dashboard request at INFO: a running RayJob is polled every 3 s.
    logging.getLogger("httpx").setLevel(logging.WARNING)
