"""Answer letters of four-option multiple-choice questions, shared by builders and the MCQA
evaluation tasks. A dataset's own integrity rules on the options live in its folder."""

from __future__ import annotations

LETTERS = "ABCD"


def label_index(label: object) -> int | None:
    """``"A"``..``"D"`` (any case) or 0-3 as an index; None for anything else."""
    if isinstance(label, bool):
        return None
    if isinstance(label, int):
        return label if 0 <= label < len(LETTERS) else None
    if isinstance(label, str) and len(label.strip()) == 1 and label.strip().upper() in LETTERS:
        return LETTERS.index(label.strip().upper())
    return None
