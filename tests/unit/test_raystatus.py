"""Reading ``ray status`` for its alive nodes (``hack/raystatus.py``): what the real-node
tests and ``make demo`` wait on before they call a Ray cluster whole."""

from __future__ import annotations

import textwrap

from hack.raystatus import alive_in_ray_status

ALL_JOINED = textwrap.dedent("""
    ======== Autoscaler status: 2026-11-29 01:37:47.942843 ========
    Node status
    ---------------------------------------------------------------
    Active:
     (no active nodes)
    Idle:
     2 cpu
     1 headgroup
    Pending:
     (no pending nodes)
    Recent failures:
     (no failures)

    Resources
    ---------------------------------------------------------------
    Total Usage:
     0.0/6.0 CPU
     0B/48.78GiB memory
     0B/20.91GiB object_store_memory
""")
"""Ray 2.52.1 in the quickstart's head pod (``make demo``), a head and two workers idle:
the nodes are counted by group."""


def test_idle_and_active_nodes_are_counted_by_group() -> None:
    assert alive_in_ray_status(ALL_JOINED) == 3
    busy = ALL_JOINED.replace(" (no active nodes)\nIdle:\n 2 cpu", " 2 cpu\nIdle:")
    assert alive_in_ray_status(busy) == 3


def test_a_head_alone_is_one_node() -> None:
    assert alive_in_ray_status(ALL_JOINED.replace(" 2 cpu\n", "")) == 1


def test_nodes_listed_by_id_count_one_each_and_pending_ones_not_at_all() -> None:
    by_id = textwrap.dedent("""
        Active:
         node_4f2a9c
         node_77b1e0
        Idle:
         (no idle nodes)
        Pending:
         1 cpu
    """)
    assert alive_in_ray_status(by_id) == 2


def test_no_report_is_no_node() -> None:
    assert alive_in_ray_status("") == 0
    assert alive_in_ray_status("ConnectionError: could not find any running Ray instance") == 0
