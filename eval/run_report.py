"""Reports over result folders, for any task of any dataset.

The generic part reads a task's metrics as they are: a metric is a number, or a statistic
``{"mean": ..., "ci95": [lo, hi]}`` / ``{"mean": ..., "sem": ...}``; metrics may be grouped
(e.g. by prompt language: ``{"ru": {"n": 15, "jaccard": {...}}}``), and a breakdown is a
mapping of rows that share numeric fields (``per_country``, ``per_category``, ...). From
that it renders the headline table (metric, value, 95% CI or SEM, n) and one table per
breakdown, so a new dataset gets a correct report with no report code. A task adds its own
sections (plots, paper-specific summaries) by defining ``Task.report_sections``, which the
writer of a report hands in (:data:`SectionsOf`): the report reads the run folder only.

Each result opens with its coverage (:mod:`culturebench.eval.coverage`: rows used of the
release's, how ``--limit`` chose them, seeds, sample or full release, sampling and what of it
is assumed, parser versions, how intervals were made) before any number. An interval is shown
only where there is one: a statistic whose ``ci95`` is null says "no interval (n < 30)", and a
standard error of zero at fewer than 30 values is not shown as ``± 0.000`` (it is no interval).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturebench.eval.coverage import checked_coverage, coverage_lines, coverage_of, sampling_of
from culturebench.text import md_cell, md_row

MAX_BREAKDOWN_ROWS = 60

# a task's own report sections (``Task.report_sections``: results, folder, relative path -> lines)
Sections = Callable[[Any, Path, str], list[str]]
# which sections a result gets: given its results.json, its task's sections (None: none). The
# report reads the run folder only; the caller that knows the task (``eval run``, ``eval
# score``, the ``eval report`` command) hands them in.
SectionsOf = Callable[[Mapping[str, Any]], Sections | None]


@dataclass(frozen=True)
class Headline:
    """One headline number of a run."""

    group: str  # "all" or a group such as a prompt language
    metric: str
    value: float
    ci95: tuple[float, float] | None = None
    sem: float | None = None
    n: int | None = None

    # set when the statistic has a ``ci95`` key whose bounds are null (too few units for one)
    no_interval: bool = False

    def formatted(self) -> str:
        """The value with its 95% interval or ± SEM, or why it has none: a null ``ci95`` (too few
        units) and an SEM of zero at fewer than :data:`MIN_BOOTSTRAP_UNITS` values (all values
        equal: a zero-width "interval" that is not one) are said in words."""
        from culturebench.eval.metrics import MIN_BOOTSTRAP_UNITS

        if self.ci95 is not None:
            return f"{self.value:.3f} [{self.ci95[0]:.3f}, {self.ci95[1]:.3f}]"
        if self.sem is not None:
            if self.sem == 0 and (self.n is None or self.n < MIN_BOOTSTRAP_UNITS):
                n = "?" if self.n is None else self.n
                return f"{self.value:.3f} (SEM 0 at n = {n} < {MIN_BOOTSTRAP_UNITS}: no interval)"
            return f"{self.value:.3f} ± {self.sem:.3f}"
        if self.no_interval:
            return f"{self.value:.3f} (no interval: n < {MIN_BOOTSTRAP_UNITS})"
        return f"{self.value:.4g}" if isinstance(self.value, float) else str(self.value)


def is_number(value: Any) -> bool:
    """A number that is not a truth value."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_stat(value: Any) -> bool:
    """A statistic: a mapping with a numeric ``mean`` (and its ``ci95`` or ``sem``)."""
    return isinstance(value, Mapping) and is_number(value.get("mean"))


def _interval(ci: Any) -> tuple[float, float] | None:
    """A ``ci95`` as two finite floats, or None (absent, null bounds, NaN)."""
    import math

    if not isinstance(ci, Sequence) or isinstance(ci, str) or len(ci) != 2 or not all(map(is_number, ci)):
        return None
    lo, hi = float(ci[0]), float(ci[1])
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else None


def _headline(group: str, metric: str, value: Any, n: Any) -> Headline | None:
    if is_stat(value):
        interval = _interval(value.get("ci95"))
        return Headline(
            group,
            metric,
            float(value["mean"]),
            interval,
            float(value["sem"]) if is_number(value.get("sem")) else None,
            int(value["n"]) if is_number(value.get("n")) else n,
            no_interval="ci95" in value and interval is None,
        )
    if is_number(value) and not _is_count(metric):
        return Headline(group, metric, value, n=n)
    return None


def is_count_column(name: str) -> bool:
    """Whether a column or key holds counts (``n``, ``n_items``, ``count``, ``items``,
    ``samples``, ``*_count``): printed as whole numbers, never ``8.000``."""
    name = name.lower()
    return name in ("n", "count", "items", "samples") or name.startswith("n_") or name.endswith("_count")


def count_text(value: Any) -> str:
    """A count as people write it: ``8`` and ``1,204``, not ``8.0``; other values unchanged."""
    if is_number(value) and float(value).is_integer():
        return f"{int(value):,}"
    return "" if value is None else str(value)


def _is_count(key: str) -> bool:
    """``n`` and ``n_*`` are sample sizes shown beside the metrics, not metrics."""
    return key == "n" or key.startswith("n_")


def _is_group(value: Any) -> bool:
    """A block of metrics for one group: it has an ``n`` or statistics among its values."""
    return isinstance(value, Mapping) and (
        is_number(value.get("n")) or any(is_stat(v) for v in value.values())
    )


def headlines(metrics: Mapping[str, Any]) -> list[Headline]:
    """Every headline number of a metrics dict, top level ("all") and per group."""
    out: list[Headline] = []
    n_all = metrics.get("n") if is_number(metrics.get("n")) else None
    for key, value in metrics.items():
        item = _headline("all", key, value, n_all)
        if item is not None:
            out.append(item)
        elif _is_group(value) and not _is_breakdown(value):
            n = value.get("n") if is_number(value.get("n")) else None
            for metric, inner in value.items():
                item = _headline(str(key), metric, inner, n)
                if item is not None:
                    out.append(item)
    return out


def _is_series(value: Any) -> bool:
    """Numbers keyed by a label (e.g. a metric per prompt variant); a statistic (``mean`` with
    its ``sem``) is not one: the headline table shows it, with its interval."""
    return isinstance(value, Mapping) and len(value) > 0 and all(is_number(v) for v in value.values())


def _is_breakdown(value: Any) -> bool:
    """Rows keyed by a label, each a mapping with at least one number or statistic."""
    return (
        isinstance(value, Mapping)
        and len(value) > 0
        and all(isinstance(v, Mapping) for v in value.values())
        and all(any(is_number(x) or is_stat(x) for x in v.values()) for v in value.values())
        and not any(is_number(v) for v in value.values())
    )


def breakdowns(metrics: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """``(group, name, rows)`` of every breakdown table, top level and per group."""
    out = []
    for key, value in metrics.items():
        if _is_group(value):
            for name, inner in value.items():
                if _is_breakdown(inner):
                    out.append((str(key), name, inner))
                elif _is_series(inner) and not _is_count(name) and not is_stat(inner):
                    out.append((str(key), name, {label: {"value": v} for label, v in inner.items()}))
        elif _is_breakdown(value):
            out.append(("all", key, value))
        elif _is_series(value) and not _is_count(key) and not is_stat(value):
            out.append(("all", key, {label: {"value": v} for label, v in value.items()}))
    return out


def cell_text(value: Any, n: Any = None) -> str:
    """One table cell: a statistic with its CI or SEM (or why it has none), a number, or blank;
    ``n``: the row's count, when the statistic has none of its own."""
    if is_stat(value):
        interval = _interval(value.get("ci95"))
        sem = float(value["sem"]) if is_number(value.get("sem")) else None
        count = value.get("n") if is_number(value.get("n")) else n
        no_interval = "ci95" in value and interval is None
        return Headline(
            "", "", float(value["mean"]), interval, sem, count if is_number(count) else None, no_interval
        ).formatted()
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value) if is_number(value) else ""


def _breakdown_table(rows: Mapping[str, Mapping[str, Any]]) -> list[str]:
    columns: list[str] = []
    for row in rows.values():
        for key, value in row.items():
            if key not in columns and key != "ci95" and (is_number(value) or is_stat(value)):
                columns.append(key)
    # a row {"n": .., "mean": .., "sem": ..} shows its mean ± SEM in one cell (an SEM of zero at
    # small n is then said to be no interval, as in the headline table)
    with_sem = "mean" in columns and "sem" in columns
    if with_sem:
        columns.remove("sem")
    heads = [f"{c} (± SEM)" if with_sem and c == "mean" else c for c in columns]
    # a row {"n": .., "jaccard": .., "ci95": [..]} shows its interval beside its metric
    lines = [md_row(["", *heads]), "| --- |" + " ---: |" * len(columns)]
    for label, row in list(rows.items())[:MAX_BREAKDOWN_ROWS]:
        cells = []
        for column in columns:
            value = row.get(column)
            if is_number(value) and isinstance(row.get("ci95"), Sequence) and column not in ("n", "n_dishes"):
                value = {"mean": value, "ci95": row["ci95"]}
            elif with_sem and column == "mean" and is_number(value) and is_number(row.get("sem")):
                value = {"mean": value, "sem": row["sem"]}
            if is_count_column(column) and is_number(value) and float(value).is_integer():
                cells.append(count_text(value))
            else:
                cells.append(cell_text(value, row.get("n")))
        lines.append(md_row([label, *cells]))
    if len(rows) > MAX_BREAKDOWN_ROWS:
        lines.append(f"| ... {len(rows) - MAX_BREAKDOWN_ROWS} more rows in results.json | |")
    return [*lines, ""]


def headline_table(metrics: Mapping[str, Any]) -> list[str]:
    """Markdown table of the headline numbers (metric, group, value with CI/SEM, n)."""
    items = headlines(metrics)
    if not items:
        return ["(no numeric metrics)", ""]
    dishes = _unit_counts(metrics)
    lines = ["| group | metric | value (95% CI or ± SEM) | n |", "| --- | --- | --- | ---: |"]
    for h in items:
        n = count_text(h.n)
        if n and h.group in dishes:
            n += f" ({dishes[h.group]})"
        lines.append(md_row([h.group, h.metric, h.formatted(), n]))
    return [*lines, ""]


def _unit_counts(metrics: Mapping[str, Any]) -> dict[str, str]:
    """group -> "3 dishes"-style text from ``n_<unit>`` counts beside ``n``."""
    out = {}
    blocks = {"all": metrics, **{str(k): v for k, v in metrics.items() if _is_group(v)}}
    for group, block in blocks.items():
        parts = [f"{count_text(v)} {k[2:]}" for k, v in block.items() if k.startswith("n_") and is_number(v)]
        if parts:
            out[group] = ", ".join(parts)
    return out


def _header(results: Mapping[str, Any], folder: Path | None = None) -> list[str]:
    prov = results["provenance"]
    ds = prov["dataset"]
    if ds.get("source") == "none":
        pin = "no dataset release (published files)"
    else:
        sha = ds.get("commit_sha") or f"manifest sha256 {ds.get('manifest_sha256')}"
        pin = md_cell(f"{ds.get('location')} @ {sha} (version {ds.get('version')})")
    model = prov.get("model")
    # names from the run's files: escaped, so a name holding HTML or a line break stays text
    title = f"## {md_cell(ds['dataset'])} / {md_cell(prov['task'])}"
    if model:
        title += f" / {md_cell(model.get('model'))} ({md_cell(model.get('backend'))})"
    # checked against the run's samples.jsonl (a cut file or an edited block is never complete)
    coverage = coverage_of(results) if folder is None else checked_coverage(folder, results)
    lines = [title, "", "### Coverage", "", *coverage_lines(coverage), "", "### Provenance", ""]
    lines.append(f"- dataset: {pin}")
    if model:
        sampling = sampling_of(model, coverage.get("seeds"))
        seeds = coverage.get("seeds")
        revision = model.get("model_revision") or "not pinned (the model as found)"
        weights = model.get("weights_sha256") or "not recorded"
        shown = ", ".join(f"{k} {v}" for k, v in sampling.items()) if isinstance(sampling, dict) else sampling
        lines += [
            f"- model revision: {revision}; weights sha256: {weights}",
            f"- sampling: {shown or 'none'}"
            + (f"; seeds: {', '.join(map(str, seeds))}" if seeds else "")
            + f"; samples: {results.get('samples')}",
        ]
    else:
        lines.append(
            f"- analysis inputs: {_short_inputs(prov.get('inputs'))}; items: {results.get('samples')}"
        )
    skipped = results.get("skipped_rows")
    if isinstance(skipped, dict):  # reason -> rows
        skipped = ", ".join(f"{why} {n}" for why, n in sorted(skipped.items())) or "none"
    lines.append(f"- skipped rows: {skipped if skipped not in (None, [], '') else 'none'}")
    counted = {
        "invalid_outputs": "outputs that are not text (scored as failures)",
        "outputs_cut_for_scoring": "outputs scored on their first 20,000 characters only",
        "duplicate_generations": "identical duplicate generations across the input files (scored once)",
        "judge_unparsed": "judge answers not in the asked form (those samples unscored)",
    }
    lines += [f"- {text}: {results[key]}" for key, text in counted.items() if results.get(key)]
    lines += [f"- culturebench: {prov.get('culturebench_git')}", ""]
    return lines


def _short_inputs(inputs: Any) -> str:
    """The inputs of an analysis run in one line (file hashes summarised by count)."""
    if not isinstance(inputs, Mapping):
        return str(inputs)
    parts = []
    for key, value in inputs.items():
        if isinstance(value, Mapping) and key.endswith("sha256"):
            parts.append(f"{key}: {len(value)} files")
        elif isinstance(value, list):
            parts.append(f"{key}: {len(value)}")
        elif isinstance(value, Mapping):
            parts.append(f"{key}: {value.get('model', '...')}")
        else:
            parts.append(f"{key}: {value}")
    return "; ".join(parts)


def result_sections(
    results: Mapping[str, Any], folder: Path, rel: str, sections: SectionsOf | None = None
) -> list[str]:
    """The generic tables for one result, then its task's own sections (``sections``: see
    :data:`SectionsOf`; none without it)."""
    metrics = results["metrics"]
    lines = ["### Headline metrics", "", *headline_table(metrics)]
    for group, name, rows in breakdowns(metrics):
        title = name if group == "all" else f"{group}: {name}"
        lines += [f"### {title}", "", *_breakdown_table(rows)]
    lines += reading_section(results)
    own = sections(results) if sections is not None else None
    if own is not None:
        lines += own(results, folder, rel)
    return lines


def unparsed_rows(metrics: Mapping[str, Any]) -> list[tuple[str, int, int, dict[str, int]]]:
    """``(group, n, unparsed, reasons)`` for every group of a metrics dict that counts answers
    read as no committed answer (the readers' ``unparsed`` block, or a multiple-choice
    ``unparseable`` count with its reasons)."""
    rows = []
    groups = [("all", metrics)] + [(str(k), v) for k, v in metrics.items() if isinstance(v, Mapping)]
    for group, block in groups:
        inner = block.get("unparsed")
        if isinstance(inner, Mapping) and "rate" in inner:
            rows.append((group, int(inner["n"]), int(inner["unparsed"]), dict(inner.get("reasons") or {})))
        elif "unparseable" in block and "n" in block and isinstance(block.get("unparsed_reasons"), Mapping):
            rows.append((group, int(block["n"]), int(block["unparseable"]), dict(block["unparsed_reasons"])))
    return rows


def reading_section(results: Mapping[str, Any]) -> list[str]:
    """Which reader read the answers and how many it could not read, by group (n beside every
    rate); a model reader's agreement with the rules."""
    rows = unparsed_rows(results.get("metrics") or {})
    reader = results.get("answer_reader")
    if not rows and not reader:
        return []
    parsers = (results.get("coverage") or {}).get("parsers") or {}
    if isinstance(reader, Mapping):
        agreement = reader.get("agreement_with_rules")
        shown = "n/a" if agreement is None else f"{agreement:.1%}"
        model = md_cell((reader.get("model") or {}).get("model"))
        how = "constrained JSON" if reader.get("constrained") else "JSON asked, not constrained"
        said = (
            f"a model, {model} ({how}): "
            f"agrees with the rule reader on {shown} of {reader.get('read')} answers it read; "
            f"{reader.get('disagreements')} disagreements listed in {reader.get('disagreements_file')}; "
            f"{reader.get('model_unreadable')} answers it gave no reading for were scored by the rules"
        )
    else:
        said = f"the committed-answer rules (answer reader {parsers.get('answer-reader', 'unversioned')})"
    lines = ["### How answers were read", "", f"- reader: {said}", ""]
    if rows:
        lines += ["| group | n | unparsed | rate | reasons |", "| --- | ---: | ---: | ---: | --- |"]
        for group, n, count, reasons in rows:
            rate = f"{count / n:.1%}" if n else "n/a"
            why = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) or "-"
            lines.append(f"| {group} | {n} | {count} | {rate} | {why} |")
        lines.append("")
    return lines


def write_report(
    folders: Sequence[str | Path], path: str | Path, *, sections: SectionsOf | None = None
) -> Path:
    """Write a Markdown report covering every result folder (plots go beside each result);
    ``sections``: each result's task's own sections (:data:`SectionsOf`)."""
    from culturebench.eval.run_folder import read_results

    out = Path(path)
    lines = ["# culturebench evaluation report", ""]
    for folder in map(Path, folders):
        results = read_results(folder)
        rel = Path(os.path.relpath(folder, out.parent)).as_posix()
        lines += _header(results, folder)
        lines += result_sections(results, folder, rel, sections)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out
