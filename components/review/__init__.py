"""``python -m pulumi_ray review``: what a change will do to running Ray workloads.

The pipeline: ``changes`` reads the input (a ``pulumi preview --json``, or two programs
or manifests as ``render --diff`` takes them) into one ``ObjectChange`` per ray.io/v1
object; ``report.review`` gives each a ``Verdict`` from its kind's module
(``raycluster``, ``rayservice``, ``rayjob``, ``raycronjob``), which asks the operator's
own render functions what the controller will do; ``rules`` holds the findings' names
and levels; ``policies`` runs the policy pack's organisation rules over the change;
``budget`` holds a quota against the change's peak and prices for its cost; ``formats``
prints the report as Markdown, text or JSON and ``sarif`` as SARIF, never with a value
of the objects in it.
"""

from .budget import Prices, parse_prices, parse_quota, with_quota
from .changes import ObjectChange, from_preview, from_sources
from .formats import GITHUB_COMMENT_LIMIT, MARKER, as_json, as_markdown, as_text
from .model import Finding, Verdict
from .policies import PolicyConfig, parse_policy_config, with_policies
from .report import Report, review
from .rules import RULES, ReviewSettings, parse_level
from .sarif import Program, as_sarif

__all__ = [
    "GITHUB_COMMENT_LIMIT",
    "MARKER",
    "RULES",
    "Finding",
    "ObjectChange",
    "PolicyConfig",
    "Prices",
    "Program",
    "Report",
    "ReviewSettings",
    "Verdict",
    "as_json",
    "as_markdown",
    "as_sarif",
    "as_text",
    "from_preview",
    "from_sources",
    "parse_level",
    "parse_policy_config",
    "parse_prices",
    "parse_quota",
    "review",
    "with_policies",
    "with_quota",
]
