"""A review as Markdown (a pull-request comment), plain text (a terminal) or JSON.

Every string printed goes through ``shown``: the stand-ins of the input layer become
``known at deploy``, ``[secret]`` and ``<autonamed>``, and no value of the objects is
printed at all, only names, counts, resource totals and the paths that change, so a
secret cannot reach a comment through any format.

Markdown stays under GitHub's limit of 65,536 characters for a comment. The headline,
the verdicts and every finding always fit: when the whole report does not, the object
details go first (objects without findings before those with warnings, before those
with a block), then the verdict table lists objects with findings one by one and the
rest as counts per verdict, then findings are listed per rule. The full report is
written to a file for a job summary or an artifact, and the comment says where.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any, Final

from operator_runtime.render.resources import Amount, format_quantity

from .._program import AUTONAME_SUFFIX
from ..rendering import SECRET_STANDIN, UNKNOWN_STANDIN
from .budget import Prices, format_cost
from .model import LEDGER_KEYS, Finding, Resources, Verdict, add_resources
from .report import Report

__all__ = [
    "GITHUB_COMMENT_LIMIT",
    "MARKER",
    "SCHEMA",
    "as_json",
    "as_markdown",
    "as_text",
    "shown",
]

GITHUB_COMMENT_LIMIT: Final = 65_536
MARKER: Final = "<!-- pulumi-ray-review -->"
"""A CI step finds its earlier comment by this line and edits it instead of adding one."""
SCHEMA: Final = "pulumi-ray.io/review/v1"
_SHOWN: Final = {
    UNKNOWN_STANDIN: "(known at deploy)",
    SECRET_STANDIN: "[secret]",
    AUTONAME_SUFFIX: "<autonamed>",
}
_ICON: Final = {"block": "⛔", "warn": "⚠️"}


def shown(text: str) -> str:
    """``text`` with the input layer's stand-ins as a reader should see them."""
    for token, standin in _SHOWN.items():
        text = text.replace(token, standin)
    return text


def _md(text: str) -> str:
    """Safe in a table cell or a list item: no pipes, no HTML, one line."""
    cleaned = shown(" ".join(text.split())).replace("->", "→")
    return cleaned.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _quantity(amount: Amount | None) -> str:
    return format_quantity(amount) if amount is not None else "0"


def _change(before: Amount | None, after: Amount | None) -> str:
    old, new = _quantity(before), _quantity(after)
    return old if old == new else f"{old} → {new}"


def _costs(prices: Prices, *sides: Resources) -> list[str]:
    return [format_cost(prices.hourly(side)) for side in sides]


def _cost_change(prices: Prices, verdict: Verdict) -> str:
    before, after, peak = _costs(prices, verdict.before, verdict.after, verdict.peak)
    text = before if before == after else f"{before} → {after}"
    return text if peak in (before, after) else f"{text} (peak {peak})"


def headline(report: Report, prices: Prices | None = None) -> str:
    if not report.verdicts:
        return "No ray.io/v1 object changes."
    blocks = sum(f.level == "block" for f in report.findings)
    warns = len(report.findings) - blocks
    before, after = report.total("before"), report.total("after")
    parts = [
        f"{len(report.verdicts)} Ray object(s) change",
        f"pods +{report.pods('pods_created')} -{report.pods('pods_deleted')}",
        f"CPU {_change(before['cpu'], after['cpu'])}",
    ]
    if any(v.value for key in ("gpu", "tpu") for v in (before[key], after[key])):
        parts.append(f"GPU {_change(before['gpu'], after['gpu'])}")
    if prices is not None:
        old, new = _costs(prices, before, after)
        parts.append(f"cost/h {old if old == new else f'{old} → {new}'}")
    parts.append(f"{blocks} blocking, {warns} warning(s)" if report.findings else "no findings")
    return " · ".join(parts)


def _row(verdict: Verdict) -> str:
    pods = f"{verdict.pods_before} → {verdict.pods_after}"
    if verdict.pods_created or verdict.pods_deleted:
        pods += f" (+{verdict.pods_created} -{verdict.pods_deleted})"
    cells = [
        verdict.ref,
        verdict.op,
        verdict.summary,
        pods,
        _change(verdict.before.get("cpu"), verdict.after.get("cpu")),
        _change(verdict.before.get("gpu"), verdict.after.get("gpu")),
        _change(verdict.before.get("memory"), verdict.after.get("memory")),
    ]
    return "| " + " | ".join(_md(cell) for cell in cells) + " |"


_TABLE_HEAD: Final = (
    "| Object | Change | What the operator does | Pods | CPU | GPU | Memory |\n"
    "|---|---|---|---|---|---|---|"
)


def _table(verdicts: Sequence[Verdict], *, compact: int) -> str:
    """``compact`` 0: a row per object; 1: a row per object with findings and one per
    verdict for the rest; 2: one row per verdict (the findings name every object)."""
    flagged = [v for v in verdicts if v.findings] if compact == 1 else []
    if not compact:
        flagged = list(verdicts)
    listed = {id(v) for v in flagged}
    rest = Counter((v.kind, v.op, v.summary) for v in verdicts if id(v) not in listed)
    lines = [_TABLE_HEAD, *(_row(v) for v in flagged)]
    for (kind, op, summary), count in sorted(rest.items()):
        lines.append(f"| {count} x {_md(kind)} | {_md(op)} | {_md(summary)} | | | | |")
    return "\n".join(lines)


def _findings(findings: Sequence[Finding], *, grouped: bool) -> str:
    if not findings:
        return ""
    lines = ["**Findings**", ""]
    if not grouped:
        for f in findings:
            lines.append(f"- {_ICON[f.level]} {f.level} `{f.rule}` {_md(f.ref)}: {_md(f.message)}")
        return "\n".join(lines)
    by_rule: dict[tuple[str, str], list[str]] = {}
    for f in findings:
        by_rule.setdefault((f.level, f.rule), []).append(f.ref)
    for (level, rule), refs in by_rule.items():
        names = ", ".join(_md(ref.split(" ", 1)[-1]) for ref in refs)
        lines.append(f"- {_ICON[level]} {level} `{rule}` ({len(refs)}): {names}")
    return "\n".join(lines)


def _ledger(report: Report, prices: Prices | None) -> str:
    before, after, peak = report.total("before"), report.total("after"), report.total("peak")
    lines = [
        "**Resources requested** (as KubeRay counts `status.desired*`)",
        "",
        "| | Before | After | Peak during the change |",
        "|---|---|---|---|",
        f"| Pods | {report.pods('pods_before')} | {report.pods('pods_after')} | "
        f"{report.pods('peak_pods')} |",
    ]
    for key in LEDGER_KEYS:
        if key in ("gpu", "tpu") and not any(side[key].value for side in (before, after, peak)):
            continue
        label = key.upper() if key != "memory" else "Memory"
        lines.append(
            f"| {label} | {_quantity(before[key])} | {_quantity(after[key])} | "
            f"{_quantity(peak[key])} |"
        )
    if prices is not None:
        lines.append("| Cost per hour | " + " | ".join(_costs(prices, before, after, peak)) + " |")
    lasting = [v for v in report.verdicts if v.peak_seconds is not None]
    if lasting:
        least = min(int(v.peak_seconds or 0) for v in lasting)
        lines += [
            "",
            f"The peak holds old and new clusters side by side ({len(lasting)} object(s)), "
            f"each for at least {least} s.",
        ]
    autoscaled = [v for v in report.verdicts if v.highest]
    if autoscaled:
        low = add_resources(*(v.lowest for v in autoscaled))
        high = add_resources(*(v.highest for v in autoscaled))
        ranges = ", ".join(
            f"{key.upper() if key != 'memory' else 'memory'} {_quantity(low[key])} to "
            f"{_quantity(high[key])}"
            for key in LEDGER_KEYS
            if high[key].value
        )
        lines += ["", f"With the autoscaler, {len(autoscaled)} cluster(s) may range over {ranges}."]
    return "\n".join(lines)


def _details(verdict: Verdict, prices: Prices | None) -> str:
    lines = [f"<details><summary>{_md(verdict.ref)}: {_md(verdict.summary)}</summary>", ""]
    if verdict.origin:
        lines.append(f"From {_md(verdict.origin)}.")
        lines.append("")
    if prices is not None:
        lines.append(f"- cost per hour: {_md(_cost_change(prices, verdict))}")
    lines.extend(f"- {_md(effect)}" for effect in verdict.effects)
    if verdict.changed:
        lines.append("")
        lines.append("Changed fields:")
        lines.extend(f"- `{shown(path)}`" for path in verdict.changed)
    lines.extend(["", "</details>"])
    return "\n".join(lines)


def _priority(verdict: Verdict) -> int:
    levels = {f.level for f in verdict.findings}
    return 2 if "block" in levels else 1 if levels else 0


def as_markdown(
    report: Report,
    *,
    limit: int = GITHUB_COMMENT_LIMIT,
    full_report: str | None = None,
    prices: Prices | None = None,
) -> str:
    """The comment; ``full_report`` names where the untrimmed report is, if anywhere;
    with ``prices``, a cost per hour for each object and in total."""
    title = f"### Ray review: {_md(headline(report, prices))}"
    if not report.verdicts:
        return f"{MARKER}\n{title}\n"
    where = f" The full report is in `{_md(full_report)}`." if full_report else ""
    reserve = 120 + len(where)  # the note that details were left out
    for compact, grouped in ((0, False), (1, False), (1, True), (2, True)):
        sections = [
            f"{MARKER}\n{title}",
            _table(report.verdicts, compact=compact),
            _findings(report.findings, grouped=grouped),
            _ledger(report, prices),
        ]
        body = "\n\n".join(section for section in sections if section) + "\n\n"
        if len(body) + reserve <= limit:
            break
    budget = limit - len(body) - reserve
    kept: set[int] = set()
    # Details of objects with a block first, then with a warning, then the rest.
    for verdict in sorted(report.verdicts, key=_priority, reverse=True):
        cost = len(_details(verdict, prices)) + 1
        if cost <= budget:
            kept.add(id(verdict))
            budget -= cost
    shown = [_details(v, prices) for v in report.verdicts if id(v) in kept]
    left_out = len(report.verdicts) - len(shown)
    note = f"_{left_out} object detail(s) left out to fit a comment.{where}_\n" if left_out else ""
    return body + "".join(d + "\n\n" for d in shown) + note


def _lasting(verdict: Verdict) -> str:
    if verdict.peak_seconds is None:
        return ""
    return f", peak {verdict.peak_pods} for at least {verdict.peak_seconds} s"


def as_text(report: Report, *, prices: Prices | None = None) -> str:
    lines = [shown(headline(report, prices))]
    for verdict in report.verdicts:
        lines.append("")
        lines.append(f"{shown(verdict.ref)} ({verdict.op}): {shown(verdict.summary)}")
        pods = f"  pods {verdict.pods_before} -> {verdict.pods_after}"
        lines.append(
            pods + f" (+{verdict.pods_created} -{verdict.pods_deleted})" + _lasting(verdict)
        )
        for key in LEDGER_KEYS:
            old, new = verdict.before.get(key), verdict.after.get(key)
            if any(a is not None and a.value for a in (old, new)):
                lines.append(f"  {key} {_change(old, new).replace('→', '->')}")
        if prices is not None:
            lines.append(f"  cost/h {_cost_change(prices, verdict).replace('→', '->')}")
        lines.extend(f"  - {shown(effect)}" for effect in verdict.effects)
    if prices is not None and report.verdicts:
        sides = (report.total(side) for side in ("before", "after", "peak"))
        costs = _costs(prices, *sides)
        lines += ["", "cost/h in total: {} -> {}, {} at the peak".format(*costs)]
    if report.findings:
        lines.append("")
        for f in report.findings:
            lines.append(f"{f.level.upper()} {f.rule} {shown(f.ref)}: {shown(f.message)}")
    return "\n".join(lines) + "\n"


def _amounts(amounts: Any) -> dict[str, str]:
    return {key: _quantity(amounts.get(key)) for key in LEDGER_KEYS}


def _json_costs(prices: Prices | None, *sides: Resources) -> dict[str, object]:
    if prices is None:
        return {}
    before, after, peak = (float(round(prices.hourly(side), 6)) for side in sides)
    return {"costPerHour": {"before": before, "after": after, "peak": peak}}


def as_json(report: Report, *, prices: Prices | None = None) -> str:
    """The report in a versioned schema (``schema``); quantities as Kubernetes strings;
    with ``prices``, ``costPerHour`` in the totals and each object."""
    totals = (report.total("before"), report.total("after"), report.total("peak"))
    document = {
        "schema": SCHEMA,
        "headline": shown(headline(report, prices)),
        "blocked": report.blocked,
        "totals": {
            "before": _amounts(totals[0]),
            "after": _amounts(totals[1]),
            "peak": _amounts(totals[2]),
            "pods": {
                name: report.pods(f"pods_{name}")
                for name in ("before", "after", "created", "deleted")
            }
            | {"peak": report.pods("peak_pods")},
        }
        | _json_costs(prices, *totals),
        "objects": [
            {
                "kind": v.kind,
                "namespace": shown(v.namespace),
                "name": shown(v.name),
                "op": v.op,
                "summary": shown(v.summary),
                "effects": [shown(e) for e in v.effects],
                "pods": {
                    "before": v.pods_before,
                    "after": v.pods_after,
                    "created": v.pods_created,
                    "deleted": v.pods_deleted,
                    "peak": v.peak_pods,
                },
                "peakSeconds": v.peak_seconds,
                "resources": {
                    "before": _amounts(v.before),
                    "after": _amounts(v.after),
                    "peak": _amounts(v.peak),
                }
                | (
                    {"autoscaler": {"min": _amounts(v.lowest), "max": _amounts(v.highest)}}
                    if v.highest
                    else {}
                ),
                **_json_costs(prices, v.before, v.after, v.peak),
                "knownAtDeploy": v.known_at_deploy,
                "changed": [shown(p) for p in v.changed],
            }
            for v in report.verdicts
        ],
        "findings": [
            {
                "rule": f.rule,
                "level": f.level,
                "object": shown(f.ref),
                "message": shown(f.message),
            }
            for f in report.findings
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
