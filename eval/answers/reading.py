"""What a reader returns: the committed value, or no value and why."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: reason code -> what it means; reports count unparsed answers by these codes
REASONS = {
    "empty": "the answer is empty or blank",
    "refusal": "the answer declines to answer (I don't know, I cannot say)",
    "ruled_out": "every name the answer gives is negated or ruled out",
    "context_only": "the answer names only context (similar dishes, neighbours), no answer",
    "no_country": "the answer names no country (or only a region spanning several, or a defunct state)",
    "undecided": "the answer stays between several options without a pick",
    "unfinished": "the answer is a reasoning block cut off before it concludes",
    "no_choice": "no option label, option text or ordinal the answer commits to",
    "not_a_label": "the answer picks a label the task does not have",
    "missing": "the criterion has no rating",
    "invalid": "the rating is not an integer on the task's scale (half point, other scale, range)",
    "conflict": "the criterion is given two different values and no stated revision",
}


@dataclass(frozen=True)
class Reading:
    """A reader's result: ``value`` (None when nothing was committed) and, when None, a
    ``reason`` from :data:`REASONS`."""

    value: Any
    reason: str | None = None

    @property
    def read(self) -> bool:
        """Whether a committed answer was found."""
        return self.value is not None

    @staticmethod
    def unparsed(reason: str) -> Reading:
        """No committed answer, for ``reason`` (a key of :data:`REASONS`)."""
        if reason not in REASONS:
            raise ValueError(f"unknown reason code {reason!r}")
        return Reading(None, reason)


def unparsed_block(samples: Sequence[Mapping[str, Any]], key: str = "unparsed_reason") -> dict[str, Any]:
    """How many of a group's samples read as no committed answer, their rate and their reasons
    (``n`` beside the rate): reported beside every score."""
    n = len(samples)
    reasons = Counter(str(s[key]) for s in samples if s.get(key))
    count = sum(reasons.values())
    return {
        "n": n,
        "unparsed": count,
        "rate": count / n if n else None,
        "reasons": dict(sorted(reasons.items())),
    }
