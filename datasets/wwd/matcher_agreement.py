"""How often the deterministic matchers agree with the WWD authors' recorded GPT-3.5 string
matcher, per dish and seed, for any of the authors' models: the country extractor against
``country_match`` (agreement and Cohen's kappa) and the fuzzy ingredient IoU against the
recorded intersection / union (share of rows with the same IoU, mean absolute difference).

Both inputs are ``eval score`` folders of the same files: one scored with the default
(deterministic) matcher, one with ``--matcher recorded``::

    python -m culturebench.datasets.wwd.matcher_agreement out/runs/gpt35 out/runs/gpt35-recorded
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.eval.agreement import cohen_kappa


def _samples(folder: Path) -> dict[str, dict[str, Any]]:
    path = folder / "samples.jsonl"
    if not path.is_file():
        raise CultureBenchError(f"{path}: no such file (an `eval score` task folder is expected)")
    with open(path, encoding="utf-8") as handle:
        return {s["id"]: s for s in map(json.loads, handle)}


def matcher_agreement(deterministic: str | Path, recorded: str | Path) -> dict[str, Any]:
    """Agreement of the two scorings (folders holding ``country/`` and ``ingredients/``)."""
    out: dict[str, Any] = {}
    det, rec = _samples(Path(deterministic) / "country"), _samples(Path(recorded) / "country")
    shared = sorted(set(det) & set(rec))
    pairs = [(det[k]["correct"], rec[k]["correct"]) for k in shared if rec[k]["correct"] is not None]
    agree = sum(a == b for a, b in pairs)
    out["country"] = {
        "n": len(pairs),
        "agree": agree,
        "agreement": agree / len(pairs) if pairs else None,
        "kappa": cohen_kappa([a for a, _ in pairs], [b for _, b in pairs]),
        "recorded_accepts_we_reject": sum(bool(b and not a) for a, b in pairs),
        "we_accept_recorded_rejects": sum(bool(a and not b) for a, b in pairs),
    }
    det, rec = _samples(Path(deterministic) / "ingredients"), _samples(Path(recorded) / "ingredients")
    pairs = [(det[k]["iou"], rec[k]["iou"]) for k in sorted(set(det) & set(rec)) if rec[k]["iou"] is not None]
    out["ingredients"] = {
        "n": len(pairs),
        "same_iou": sum(abs(a - b) < 1e-9 for a, b in pairs) / len(pairs) if pairs else None,
        "mean_abs_difference": sum(abs(a - b) for a, b in pairs) / len(pairs) if pairs else None,
        "mean_ours": sum(a for a, _ in pairs) / len(pairs) if pairs else None,
        "mean_recorded": sum(b for _, b in pairs) / len(pairs) if pairs else None,
    }
    return out


if __name__ == "__main__":  # pragma: no cover - a thin printer
    if len(sys.argv) != 3:
        sys.exit(
            "usage: python -m culturebench.datasets.wwd.matcher_agreement DETERMINISTIC_DIR RECORDED_DIR"
        )
    try:
        print(json.dumps(matcher_agreement(sys.argv[1], sys.argv[2]), indent=2))
    except (CultureBenchError, KeyError, json.JSONDecodeError) as exc:
        sys.exit(f"error: {exc}")
