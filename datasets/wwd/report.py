"""World Wide Dishes files summarising several scored tasks (``eval score`` hook)."""

from __future__ import annotations


def summary_files(results_by_task, out_dir):
    """Files summarising several scored tasks: ``table_h9.csv`` (the authors' layout), item
    Table H.9 of ``culturebench eval paper wwd``."""
    from culturebench.datasets.wwd.table_h9 import summary_files as write

    return write(results_by_task, out_dir)
