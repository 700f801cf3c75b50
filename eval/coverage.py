"""What a run measured, stated before any number: the ``coverage`` block that opens every
``results.json`` (its first key) and every ``report.md`` and ``eval paper`` report.

A run's coverage says: how many of the release's rows it used and how ``--limit`` chose them
(:class:`~culturebench.eval.dataset_ref.RowChoice`), the seeds (every seed, never the backend's
base seed as if it were the only one), whether the release is the shipped sample or a full
build, the sampling settings with where they came from and which of them are assumed (the
grid of ``eval reproduce`` declares what the paper does not state), the versions of the answer
parsers (:data:`PARSERS`) and how the 95% intervals were made. :func:`run_coverage` builds it
when a run starts (it is kept in ``run.json`` but is no part of the run's identity);
:func:`coverage_of` reads it back, or reconstructs what it can from the provenance of a
results file written without one (older runs); :func:`coverage_lines` renders it.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# parser name -> the module whose ``VERSION`` constant names its reading rules (``module:NAME``
# for a constant of another name)
PARSERS = {
    "country": "culturebench.eval.answers.countries",
    "answer-reader": "culturebench.eval.answers:READER_VERSION",
    "letters": "culturebench.eval.multiple_choice",
    "ratings": "culturebench.eval.ratings",
    "dish-name": "culturebench.eval.metrics:CONTAINS_WITHIN_EDITS_VERSION",
}
COMMAND_LINE = "the command line (--max-new-tokens, --temperature, --seed; default greedy, 200 new tokens)"
RECONSTRUCTED = "reconstructed from the provenance (this results.json has no coverage block)"


def parser_versions() -> dict[str, str]:
    """The ``VERSION`` of every answer parser (:data:`PARSERS`), by parser name."""
    out = {}
    for name, target in PARSERS.items():
        module, _, attribute = target.partition(":")
        out[name] = str(getattr(importlib.import_module(module), attribute or "VERSION", "unversioned"))
    return out


def release_info(dataset: Mapping[str, Any], config: str | None, split: str | None) -> dict[str, Any] | None:
    """The release a run read (``dataset``: its :class:`DatasetRef` as a dict): config, split,
    its row count and whether it is the shipped sample (``build`` ``sample``) or a full build
    (``full``; a Hub release is one: ``culturebench release`` refuses sample builds). None for
    a task that reads no release."""
    source = dataset.get("source")
    if source == "none" or not source:
        return None
    out: dict[str, Any] = {
        "dataset": dataset.get("dataset"),
        "version": dataset.get("version"),
        "config": config,
        "split": split,
        "rows": None,
        "build": "full" if source == "hub" else None,
    }
    if source == "local":
        manifest = _manifest(Path(str(dataset.get("location"))))
        if manifest is not None:
            out["build"] = "sample" if manifest.get("sample") else "full"
            split_info = (((manifest.get("configs") or {}).get(config) or {}).get("splits") or {}).get(split)
            if isinstance(split_info, dict) and isinstance(split_info.get("num_rows"), int):
                out["rows"] = split_info["num_rows"]
    return out


def _manifest(folder: Path) -> dict[str, Any] | None:
    """A release folder's manifest, or None when it is gone or unreadable (the coverage then
    says the build is unknown; the run itself pinned the manifest by its sha256)."""
    try:
        data = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def sampling_of(model: Mapping[str, Any] | None, seeds: Sequence[int] | None) -> dict[str, Any] | None:
    """The sampling settings of a run's model; with ``seeds`` without the backend's base seed
    (each generation used one of ``seeds``, never that one)."""
    sampling = (model or {}).get("sampling")
    if not isinstance(sampling, Mapping):
        return None
    return {k: v for k, v in sampling.items() if not (seeds and k == "seed")}


def run_coverage(
    task: Any,
    run_info: Mapping[str, Any],
    *,
    choice: Any = None,
    requests: Sequence[Any] = (),
    sampling_source: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The coverage of an ``eval run`` (or one cell of ``eval reproduce``): ``run_info`` is the
    run's ``run.json`` content, ``choice`` the :class:`RowChoice` of its rows (None for a task
    that reads no release rows), ``requests`` its requests, ``sampling_source`` where the
    sampling came from (``source``, ``assumed``: the settings the paper does not state, ``why``)
    when not from the command line."""
    from culturebench.eval.metrics import INTERVAL_RULES

    seeds = list(run_info.get("seeds") or []) or None
    release = release_info(
        run_info.get("dataset") or {}, task.config if task.needs_dataset else None, task.split
    )
    if release is not None and choice is not None:
        release["rows"] = choice.release_rows
    asked = len({r.meta.get("row_id") for r in requests if r.meta.get("row_id") is not None})
    model = run_info.get("model")
    source = dict(sampling_source or {})
    out: dict[str, Any] = {
        "release": release,
        "rows": {
            "release": None if choice is None else choice.release_rows,
            "used": None if choice is None else choice.used,
            "asked": asked if choice is not None else None,
        },
        "limit": None if choice is None or run_info.get("limit") is None else choice.to_dict(),
        "requests": len(requests),
        "languages": list(run_info.get("languages") or []),
        "seeds": seeds,
        "generations_per_request": len(seeds) if seeds else 1,
        "sampling": sampling_of(model, seeds) if isinstance(model, Mapping) else None,
        "sampling_source": source.get("source") or (COMMAND_LINE if isinstance(model, Mapping) else None),
        "sampling_assumed": source.get("assumed", [] if not source else None),
        "sampling_why": source.get("why") or "",
        "parsers": parser_versions(),
        "parsers_used": list(getattr(task, "parsers", ()) or ()),
        "intervals": INTERVAL_RULES,
    }
    if run_info.get("limit") is not None and choice is None:  # a task reading another run's outputs
        out["limit"] = {
            "limit": run_info["limit"],
            "how": "first",
            "text": _first_requests(run_info["limit"]),
        }
    return out


def _first_requests(limit: int) -> str:
    return (
        f"--limit {limit}: the first {limit} requests (the task reads another run's outputs, not "
        "release rows)"
    )


def finished(coverage: Mapping[str, Any], samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``coverage`` with what the finished run holds: its samples and the rows they answer."""
    rows = {s.get("row_id") for s in samples if s.get("row_id") is not None}
    return {
        **coverage,
        "samples": len(samples),
        "rows": {**(coverage.get("rows") or {}), "scored": len(rows)},
    }


def scored_coverage(
    task: Any, run_info: Mapping[str, Any], samples: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The coverage of ``eval score`` (recorded outputs scored against a release): the rows the
    outputs answer of the release's rows, their seeds, the recorded sampling (where the files
    state one) and the parser versions."""
    from culturebench.eval.metrics import INTERVAL_RULES

    seeds = sorted({int(s["seed"]) for s in samples if isinstance(s.get("seed"), int)}) or None
    release = release_info(run_info.get("dataset") or {}, task.config, task.split)
    rows = len({s.get("row_id") for s in samples if s.get("row_id") is not None})
    model = run_info.get("model")
    return {
        "release": release,
        "rows": {"release": (release or {}).get("rows"), "used": rows, "asked": rows, "scored": rows},
        "limit": None,
        "requests": len({str(s.get("id", "")).partition("@")[0] for s in samples}),
        "languages": sorted({str(s["lang"]) for s in samples if s.get("lang")}),
        "seeds": seeds,
        "generations_per_request": len(seeds) if seeds else 1,
        "samples": len(samples),
        "sampling": sampling_of(model, seeds) if isinstance(model, Mapping) else None,
        "sampling_source": "the recorded outputs (eval score): as the files record it, if at all",
        "sampling_assumed": None,
        "sampling_why": "",
        "parsers": parser_versions(),
        "parsers_used": list(getattr(task, "parsers", ()) or ()),
        "intervals": INTERVAL_RULES,
    }


def coverage_of(results: Mapping[str, Any]) -> dict[str, Any]:
    """A results file's coverage block, or for one written without it, what its provenance
    tells (marked ``reconstructed``; the parser versions are then unknown)."""
    if isinstance(results.get("coverage"), Mapping):
        return dict(results["coverage"])
    prov = results.get("provenance") or {}
    seeds = list(results.get("seeds") or prov.get("seeds") or []) or None
    release = release_info(prov.get("dataset") or {}, prov.get("config"), prov.get("split"))
    limit = prov.get("limit")
    model = prov.get("model")
    return {
        "reconstructed": RECONSTRUCTED,
        "release": release,
        "rows": {"release": (release or {}).get("rows"), "used": results.get("items"), "asked": None},
        "limit": None if limit is None else {"limit": limit, "how": "first", "text": _old_limit(limit)},
        "languages": list(prov.get("languages") or []),
        "seeds": seeds,
        "generations_per_request": len(seeds) if seeds else 1,
        "samples": results.get("samples"),
        "sampling": sampling_of(model, seeds) if isinstance(model, Mapping) else None,
        "sampling_source": None,
        "sampling_assumed": None,
        "sampling_why": "",
        "parsers": None,
        "parsers_used": None,
        "intervals": None,
    }


def checked_coverage(folder: str | Path, results: Mapping[str, Any]) -> dict[str, Any]:
    """A finished run's coverage (:func:`coverage_of`), its counts checked against the run's
    ``samples.jsonl`` (never taken from ``results.json`` alone). What the run recorded from its
    samples (``samples``, ``rows.scored``, ``items``) must be what the file holds: otherwise a
    :class:`CultureBenchError` naming the file and the mismatch (a file cut short, or a
    coverage block edited). What it set out to cover (the rows used, the requests: every
    prompt of every language, the seeds) and the file does not hold makes the run ``partial``
    (one reason per line; :func:`coverage_lines` and ``eval paper`` say so). ``checked``: what
    the file holds, or None for a run with no ``samples.jsonl`` (an analysis, or a run whose
    samples are gone: its counts are then marked as not checked)."""
    from culturebench.errors import CultureBenchError
    from culturebench.eval.run_folder import RESULTS, SAMPLES, read_run_samples
    from culturebench.eval.tasks.base import split_job_id

    coverage = coverage_of(results)
    path = Path(folder) / SAMPLES
    if not path.is_file():
        return {**coverage, "checked": None, "partial": []}
    samples = read_run_samples(Path(folder))
    rows = {str(s["row_id"]) for s in samples if s.get("row_id") is not None}
    seeds_held = sorted({int(s.get("seed") or 0) for s in samples if isinstance(s.get("seed"), int)})
    counts = {
        "samples": len(samples),
        "rows": len(rows),
        "requests": len({split_job_id(s["id"])[0] for s in samples}),
    }
    held: dict[str, Any] = {**counts, "seeds": seeds_held}
    scored = (coverage.get("rows") or {}).get("scored")
    recorded = {
        "samples": [("samples", results.get("samples")), ("coverage.samples", coverage.get("samples"))],
        "rows": [("items", results.get("items")), ("coverage.rows.scored", scored)],
    }
    for what, claims in recorded.items():
        for key, claim in claims:
            if isinstance(claim, int) and not isinstance(claim, bool) and claim != counts[what]:
                raise CultureBenchError(
                    f"{path} holds {counts[what]} {what}, {Path(folder) / RESULTS} says {claim} ({key}): the "
                    "run's files disagree (samples.jsonl cut short, or results.json edited); re-run or "
                    "re-score it"
                )
    partial = []
    used = (coverage.get("rows") or {}).get("used")
    if isinstance(used, int) and used > counts["rows"]:
        partial.append(f"{SAMPLES} answers {counts['rows']} of the {used} rows used")
    requests = coverage.get("requests")
    if isinstance(requests, int) and requests > counts["requests"]:
        partial.append(
            f"{SAMPLES} answers {counts['requests']} of the {requests} requests (prompts × languages)"
        )
    seeds = [s for s in coverage.get("seeds") or [] if s not in seeds_held]
    if seeds:
        partial.append(f"seed(s) {', '.join(map(str, seeds))} have no sample in {SAMPLES}")
    return {**coverage, "checked": held, "partial": partial}


def _old_limit(limit: int) -> str:
    """A ``--limit`` recorded before rows were spread over groups: the first rows were taken."""
    return f"--limit {limit}: the first {limit} rows in release order (a run made before rows were spread)"


def limit_text(coverage: Mapping[str, Any]) -> str | None:
    """How ``--limit`` chose the rows, in one line (None without ``--limit``)."""
    limit = coverage.get("limit")
    return str(limit.get("text")) if isinstance(limit, Mapping) else None


def _rows_text(coverage: Mapping[str, Any]) -> str:
    rows = coverage.get("rows") or {}
    release = coverage.get("release") or {}
    of = rows.get("release") if rows.get("release") is not None else release.get("rows")
    used = rows.get("used")
    if used is None and of is None:
        return "rows: not from a release (the task reads another run's outputs or published files)"
    text = f"rows used: {'?' if used is None else used} of {'?' if of is None else of}"
    if release.get("config"):
        text += f" ({release.get('config')}/{release.get('split')})"
    if rows.get("scored") is not None and rows.get("scored") != used:
        text += f"; {rows['scored']} answered in the samples"
    return text


def _release_text(release: Mapping[str, Any] | None) -> str:
    if not release:
        return "release: none (published files)"
    build = {
        "sample": "the SHIPPED SAMPLE (a few rows for tests; its numbers are not the paper's)",
        "full": "a full build",
    }.get(str(release.get("build")), "build unknown (the release folder is gone)")
    return f"release: {release.get('dataset')} {release.get('version') or ''}, {build}".replace(" ,", ",")


def _sampling_text(coverage: Mapping[str, Any]) -> str:
    sampling = coverage.get("sampling")
    if not sampling:
        return "sampling: none (no generating model)"
    text = "sampling: " + ", ".join(f"{k} {v}" for k, v in sampling.items())
    if coverage.get("sampling_source"):
        text += f"; from {coverage['sampling_source']}"
    assumed = coverage.get("sampling_assumed")
    if assumed:
        text += f"; ASSUMED (the paper does not state them): {', '.join(map(str, assumed))}"
    elif assumed is None and coverage.get("sampling_why"):
        text += "; which settings are assumed is not declared (see why)"
    elif assumed == [] and coverage.get("sampling_why"):
        text += "; none assumed"
    if coverage.get("sampling_why"):
        text += f". Why: {coverage['sampling_why']}"
    return text


def _seeds_text(coverage: Mapping[str, Any]) -> str:
    seeds = coverage.get("seeds")
    if seeds:
        return f"seeds: {', '.join(map(str, seeds))} ({len(seeds)} generations per request)"
    return "seeds: one pass (no --seeds)"


def _parsers_text(coverage: Mapping[str, Any]) -> str:
    parsers = coverage.get("parsers")
    if not parsers:
        return "answer parsers: versions not recorded"
    used = coverage.get("parsers_used")
    versions = ", ".join(f"{k} {v}" for k, v in parsers.items())
    if used:
        named = ", ".join(f"{k} {parsers.get(k, '(unversioned)')}" for k in used)
        return f"answer parsers used: {named} (all: {versions})"
    return f"answer parsers: {versions} (the task declares none it uses)"


def coverage_lines(coverage: Mapping[str, Any]) -> list[str]:
    """The coverage as Markdown bullet lines, in the order a reader needs them."""
    lines = []
    if coverage.get("reconstructed"):
        lines.append(f"- coverage {coverage['reconstructed']}")
    lines += [f"- PARTIAL: {why}" for why in coverage.get("partial") or []]
    if "checked" in coverage and coverage["checked"] is None:
        lines.append("- counts as results.json states them: no samples.jsonl to check them against")
    lines += [f"- {_rows_text(coverage)}", f"- limit: {limit_text(coverage) or 'none (every row)'}"]
    lines.append(f"- {_release_text(coverage.get('release'))}")
    lines += [f"- {_seeds_text(coverage)}", f"- {_sampling_text(coverage)}", f"- {_parsers_text(coverage)}"]
    if coverage.get("samples") is not None:
        lines.append(f"- samples: {coverage['samples']}")
    if coverage.get("intervals"):
        lines.append(f"- {coverage['intervals']}")
    return lines
