"""World Wide Dishes files summarising several scored tasks (``eval score`` hook)."""

from __future__ import annotations


def summary_files(results_by_task, out_dir):
    """Files summarising several scored tasks: ``table_h9.csv`` (the authors' layout), item
    Table H.9 of ``culturebench eval paper wwd``."""
    from culturebench.datasets.wwd.table_h9 import summary_files as write

    return write(results_by_task, out_dir)


def printed_table(file_name: str, model: str):
    """The printed cells a summary file of ours is compared with (``eval compare FILE --paper
    wwd:MODEL``): ``table_h9_paper.csv`` against Table H.9's row of ``model``."""
    from culturebench.datasets.wwd.paper_report import printed_h9

    return printed_h9(file_name, model)
