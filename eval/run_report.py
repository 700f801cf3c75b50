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
from pathlib import Path
from typing import Any

from culturebench.eval.coverage import checked_coverage, coverage_lines, coverage_of, sampling_of

# the shapes of a metrics dict (headlines, breakdowns) live in metric_shapes (a leaf: the run
# folder's schema reads them too)
from culturebench.eval.metric_shapes import (  # noqa: F401  (re-exported)
    Headline,
    _headline,
    _interval,
    _is_breakdown,
    _is_count,
    _is_group,
    _is_series,
    breakdowns,
    cell_text,
    count_text,
    headlines,
    is_count_column,
    is_number,
    is_stat,
)
from culturebench.text import md_cell, md_row

MAX_BREAKDOWN_ROWS = 60

# a task's own report sections (``Task.report_sections``: results, folder, relative path -> lines)
Sections = Callable[[Any, Path, str], list[str]]
# which sections a result gets: given its results.json, its task's sections (None: none). The
# report reads the run folder only; the caller that knows the task (``eval run``, ``eval
# score``, the ``eval report`` command) hands them in.
SectionsOf = Callable[[Mapping[str, Any]], Sections | None]


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
