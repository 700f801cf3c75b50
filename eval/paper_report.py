"""``culturebench eval paper <dataset> RUN...``: one report per paper, with every table and
figure of the paper listed and, for each, what this package can say about it.

A dataset's ``paper.yaml`` lists the paper's items under ``items:`` (``ref``, ``title``, and
either ``compute:`` naming a function of the dataset's ``paper_report`` module, or a
``status`` of ``not-a-result`` / ``not-reproducible`` with ``why``). Published numbers the
computations compare with sit beside them in ``paper.yaml`` (``results:``, and the ``tables:``
the dataset card compares too), with ``models:`` mapping the paper's model names to the Hub
ids a run may name. No published number is written in Python: an item function reads every
one from the catalogue (``Context.results``, ``published_table``), and its ref and title too
(``Context.ref``, ``Context.title``).

The item functions are the one place a paper comparison is computed. Commands that repeat
one item in a layout of their own (``eval ash-summary``: Figure 1 of ash; ``eval
wwd-community-review``: Tables 2-3 of wwd; ``eval score``'s ``table_h9.csv``: Table H.9 of
wwd) call :func:`run_item`, which runs the catalogue's function for that ref exactly as
``eval paper`` does, and write what the item left in ``Context.data``.

Each computed item is built from run folders (found by task name) and the release, never by
hand: rows carry our number, the paper's number where it prints one, the difference, n and a
95% bootstrap interval; an item whose runs are missing says which runs it needs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.jsonsafe import json_text
from culturebench.outputs import OutputKind

REPRODUCED = "reproduced"  # computed, and compared with a number the paper prints
COMPUTED = "computed"  # computed from the runs, with nothing in the paper to compare (other models)
MISSING = "missing inputs"  # the runs it needs were not given
NOT_A_RESULT = "not a result"  # an example, a prompt, a diagram, an interface
NOT_REPRODUCIBLE = "not reproducible"  # needs data that is not published
STATUSES = (REPRODUCED, COMPUTED, MISSING, NOT_A_RESULT, NOT_REPRODUCIBLE)


@dataclass
class Row:
    """One line of an item: our number beside the paper's, with n and a 95% interval."""

    label: str
    ours: float | None
    paper: float | None = None
    n: int | None = None
    ci95: tuple[float, float] | None = None
    note: str = ""

    @property
    def difference(self) -> float | None:
        return None if self.ours is None or self.paper is None else self.ours - self.paper


@dataclass
class Item:
    """One table or figure of the paper."""

    ref: str
    title: str
    status: str = MISSING
    rows: list[Row] = field(default_factory=list)
    unit: str = ""  # what the numbers are (accuracy %, share %, count)
    missing: list[str] = field(default_factory=list)
    note: str = ""
    figures: list[str] = field(default_factory=list)


@dataclass
class Run:
    """A finished run folder: what it ran and its samples (read on demand)."""

    folder: Path
    task: str
    model: str
    config: str | None
    results: dict[str, Any]
    _samples: list[dict[str, Any]] | None = field(default=None, repr=False)

    @classmethod
    def from_results(cls, folder: Path, results: dict[str, Any]) -> Run:
        """A run from its ``results.json`` content (read from ``folder`` or just scored)."""
        prov = results["provenance"]
        model = prov.get("model") or {}
        name = model.get("model") if isinstance(model, dict) else model
        return cls(Path(folder), prov["task"], str(name or "-"), prov.get("config"), results)

    @classmethod
    def unread(cls, folder: Path, task: str) -> Run:
        """A folder given as a run of ``task`` and not read here: the item that uses it reads
        (and checks) its files itself (``eval ash-summary``'s judge runs)."""
        return cls(Path(folder), task, "-", None, {})

    @property
    def metrics(self) -> dict[str, Any]:
        return self.results.get("metrics", {})

    @property
    def options(self) -> dict[str, Any]:
        """The run's task options (``--option``)."""
        return dict(self.results.get("provenance", {}).get("task_options") or {})

    def samples(self) -> list[dict[str, Any]]:
        if self._samples is None:
            from culturebench.eval.run_folder import SAMPLES, read_samples

            self._samples = read_samples(self.folder / SAMPLES)
        return self._samples


@dataclass
class Context:
    """What an item's function gets: the runs, the paper's numbers, the release, a folder
    for figures, and the catalogue entry it computes (``spec``: ref, title, why)."""

    dataset: str
    runs: list[Run]
    paper: dict[str, Any]
    out: Path
    release_rows: Callable[[str], list[dict[str, Any]]]
    release: dict[str, Any] | None
    inputs: dict[str, Path] = field(default_factory=dict)  # other files, by name (--input KEY=PATH)
    spec: dict[str, Any] = field(default_factory=dict)
    # What items computed beyond their rows (full tables, summaries), by name, for the commands
    # that write one item in their own layout (:func:`run_item`); not part of the report.
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        """The item's ref, from the catalogue (``Table 3``)."""
        return str(self.spec.get("ref", "?"))

    @property
    def title(self) -> str:
        """The item's title, from the catalogue."""
        return str(self.spec.get("title", ""))

    def runs_of(self, task: str, **options: Any) -> list[Run]:
        """Runs of ``task`` (by its current name or an old one, :attr:`Task.aliases`) whose
        options include ``options`` (an option given as None must be absent from the run)."""
        from culturebench.eval.tasks import canonical_name

        want = canonical_name(self.dataset, task)
        return [
            r
            for r in self.runs
            if canonical_name(self.dataset, r.task) == want
            and all(r.options.get(k) == v for k, v in options.items())
        ]

    def paper_model(self, model: str) -> str | None:
        """The paper's name for a run's model, by the ``models:`` aliases (the last path
        part of a Hub id or folder, case-insensitive), or None."""
        base = model.rstrip("/").rsplit("/", 1)[-1].lower()
        for name, aliases in (self.paper.get("models") or {}).items():
            if base == name.lower() or base in {a.rstrip("/").rsplit("/", 1)[-1].lower() for a in aliases}:
                return name
        return None

    def status(self, runs: Sequence[Run]) -> str:
        """``reproduced`` when one of the runs is of a model the paper names, else ``computed``."""
        return REPRODUCED if any(self.paper_model(r.model) for r in runs) else COMPUTED

    def model_label(self, run: Run) -> str:
        """The paper's name of the run's model, else the last part of the run's model path."""
        return self.paper_model(run.model) or run.model.rstrip("/").rsplit("/", 1)[-1]

    @property
    def sample_release(self) -> bool:
        """The release given is a sample build (its counts are not the paper's)."""
        return bool(self.release and self.release.get("sample"))

    def results(self, key: str) -> Any:
        """Published numbers (``paper.yaml`` ``results.<key>``)."""
        return (self.paper.get("results") or {}).get(key)

    def published_table(self, stat: str) -> dict[str, Any]:
        """A published table the card compares too (``paper.yaml`` ``tables``, by ``stat``)."""
        from culturebench.cards.paper import published_table

        return published_table(self.paper, stat)


def load_runs(folders: Sequence[Path], dataset: str) -> list[Run]:
    """Finished runs of ``dataset``; a folder of another dataset or an unfinished run is an
    error naming it."""
    from culturebench.eval.run_folder import read_results

    runs = []
    seen: dict[Path, Path] = {}
    for folder in folders:
        folder = Path(folder)
        if folder.resolve() in seen:
            first = seen[folder.resolve()]
            raise CultureBenchError(f"{folder}: the same run is given twice (also as {first})")
        seen[folder.resolve()] = folder
        results = read_results(folder)
        prov = results["provenance"]
        if prov["dataset"].get("dataset") != dataset:
            raise CultureBenchError(f"{folder}: a run of {prov['dataset'].get('dataset')!r}, not {dataset!r}")
        runs.append(Run.from_results(folder, results))
    return runs


def load_catalogue(dataset: str) -> tuple[dict[str, Any], Any, Path]:
    """The dataset's ``paper.yaml`` (the one the card reads), its paper module and its path;
    a catalogue without ``items:`` is an error."""
    from culturebench import registry
    from culturebench.cards.paper import read_catalogue

    entry = registry.get(dataset)
    paper_path = entry.folder / "paper.yaml"
    paper = read_catalogue(entry.folder) or {}
    if not paper.get("items"):
        raise CultureBenchError(f"{paper_path}: no 'items:' (the paper's tables and figures)")
    return paper, entry.module("paper"), paper_path


def _release_reader(
    dataset: str, local: str | None, revision: str | None, repo: str | None
) -> tuple[Callable[[str], list[dict[str, Any]]], dict[str, Any]]:
    """``release_rows(config)`` reading the named release (resolved once: every item reads
    one revision), and the dict it fills with the release's reference."""
    release_cache: dict[str, list[dict[str, Any]]] = {}
    release_ref: dict[str, Any] = {}
    pinned: list[Any] = []

    def release_rows(config: str) -> list[dict[str, Any]]:
        if config not in release_cache:
            from culturebench.eval.dataset_ref import load_rows, resolve_dataset

            if not (local or revision or repo):
                raise _NeedsRelease(f"the release (--local, --revision or --repo) for config {config!r}")
            if not pinned:
                pinned.append(resolve_dataset(dataset, revision=revision, local=local, repo=repo))
                release_ref.update(asdict(pinned[0]))
                if local:  # a sample build says so in its manifest; its counts are not the paper's
                    manifest = json.loads((Path(local) / "manifest.json").read_text(encoding="utf-8"))
                    release_ref["sample"] = bool(manifest.get("sample"))
            release_cache[config] = load_rows(pinned[0], config, "test", None)
        return release_cache[config]

    return release_rows, release_ref


def run_item(
    dataset: str,
    ref: str,
    out: Path,
    *,
    runs: Sequence[Run] = (),
    inputs: Mapping[str, str | Path] | None = None,
    local: str | None = None,
    revision: str | None = None,
    repo: str | None = None,
) -> tuple[Item, Context]:
    """One item of the catalogue (by ``ref``), computed by its function exactly as ``eval
    paper`` computes it, with ``out`` as its folder for files; returns the item and the
    context, whose ``data`` holds what the item computed beyond its rows. For the commands
    that repeat one item in a layout of their own (``eval ash-summary``, ``eval
    wwd-community-review``, ``eval score``'s ``table_h9.csv``)."""
    paper, module, paper_path = load_catalogue(dataset)
    spec = next((s for s in paper["items"] if str(s.get("ref")) == ref), None)
    if spec is None:
        raise CultureBenchError(f"{paper_path}: no item {ref!r}")
    release_rows, release_ref = _release_reader(dataset, local, revision, repo)
    given = {k: Path(v) for k, v in (inputs or {}).items()}
    ctx = Context(dataset, list(runs), paper, Path(out), release_rows, release_ref, given)
    return _item(spec, module, ctx, paper_path), ctx


def build_report(
    dataset: str,
    folders: Sequence[Path],
    out: Path,
    *,
    local: str | None = None,
    revision: str | None = None,
    repo: str | None = None,
    inputs: dict[str, str | Path] | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Every item of the dataset's paper, computed where the runs allow (``inputs``: other
    files an item reads, e.g. ``{"human": "ratings.csv"}``); writes
    ``paper_report.md``, ``paper_report.json`` and figures into ``out`` (staged, then renamed;
    an existing report is replaced only with ``overwrite``, anything else is refused)."""
    from culturebench.outputs import staged_output

    paper, module, paper_path = load_catalogue(dataset)
    catalogue = paper["items"]
    runs = load_runs(folders, dataset)
    release_rows, release_ref = _release_reader(dataset, local, revision, repo)
    out = Path(out)
    given = {k: Path(v) for k, v in (inputs or {}).items()}
    check_inputs(given, paper.get("inputs") or {}, paper_path)
    with staged_output(out, PAPER_REPORT, overwrite=overwrite, dataset=dataset) as staged:
        ctx = Context(dataset, runs, paper, staged, release_rows, release_ref, given)
        items = [_item(spec, module, ctx, paper_path) for spec in catalogue]
        report = {
            "dataset": dataset,
            "paper": paper.get("paper"),
            "runs": [{"folder": str(r.folder), "task": r.task, "model": r.model} for r in runs],
            "release": release_ref or None,
            "inputs": {k: str(v) for k, v in (inputs or {}).items()},
            "items": [asdict(i) for i in items],
            "status_counts": {s: sum(i.status == s for i in items) for s in STATUSES},
        }
        (staged / "paper_report.json").write_text(json_text(report, indent=2, default=str), "utf-8")
        (staged / "paper_report.md").write_text(render(report, items), "utf-8")
    return report


PAPER_REPORT = OutputKind("paper-report", ("paper_report.json",))


def check_inputs(given: dict[str, Path], declared: dict[str, Any], where: Path) -> None:
    """Every ``--input KEY=PATH`` names an input the paper's items read (``inputs:`` of
    ``paper.yaml``) and an existing file; an unknown key is an error, not silently ignored."""
    from culturebench.errors import UsageError

    for key, path in given.items():
        if key not in declared:
            known = ", ".join(sorted(declared)) or "none"
            raise UsageError(f"--input {key}={path}: unknown input key {key!r} (this paper reads: {known})")
        if not path.exists():
            raise UsageError(f"--input {key}={path}: no such file")
        if path.is_dir() and not declared[key].get("folder", False):
            raise UsageError(f"--input {key}={path}: a folder, expected a file")


class _NeedsRelease(CultureBenchError):
    """An item needs the release and none was named."""


def _item(spec: dict[str, Any], module: Any, ctx: Context, where: Path) -> Item:
    ref, title = str(spec.get("ref", "?")), str(spec.get("title", ""))
    if "compute" not in spec:
        status = spec.get("status")
        if status not in (NOT_A_RESULT, NOT_REPRODUCIBLE):
            raise CultureBenchError(
                f"{where}: item {ref!r} needs compute: or a status ({NOT_A_RESULT!r}, {NOT_REPRODUCIBLE!r})"
            )
        return Item(ref, title, status, note=str(spec.get("why", "")))
    fn = getattr(module, str(spec["compute"]), None) if module is not None else None
    if fn is None:
        raise CultureBenchError(
            f"{where}: item {ref!r}: compute {spec['compute']!r} is not in the dataset's paper module"
        )
    try:
        item = fn(replace(ctx, spec=spec))
    except _NeedsRelease as exc:
        return Item(ref, title, MISSING, missing=[str(exc)], note=str(spec.get("why", "")))
    item.ref, item.title = ref, title
    if spec.get("why") and not item.note:
        item.note = str(spec["why"])
    return item


def percent(value: float | None) -> float | None:
    """A share as a percentage (None stays None)."""
    return None if value is None else 100 * value


def percent_ci(ci: tuple[float, float] | None) -> tuple[float, float] | None:
    """An interval of shares as percentages."""
    return None if ci is None else (100 * ci[0], 100 * ci[1])


def unit_mean(
    samples: Sequence[dict[str, Any]], value: Callable[[dict[str, Any]], float | None], unit: str = "row_id"
) -> tuple[float | None, tuple[float, float] | None, int]:
    """Mean of ``value`` over samples, a 95% bootstrap interval resampling ``unit`` (the
    question, the dish: every prompt of a drawn unit moves with it) and the number of units."""
    from culturebench.eval.metrics import bootstrap_ci

    pairs = [(v, s.get(unit, s.get("id"))) for s in samples if (v := value(s)) is not None]
    if not pairs:
        return None, None, 0
    mean, lo, hi = bootstrap_ci([float(v) for v, _ in pairs], units=[u for _, u in pairs])
    return mean, (lo, hi), len({u for _, u in pairs})


def by_unit(
    samples: Sequence[dict[str, Any]], value: Callable[[dict[str, Any]], float | None], unit: str = "row_id"
) -> dict[str, list[float]]:
    """Values grouped by unit, for paired bootstraps of a difference."""
    out: dict[str, list[float]] = {}
    for s in samples:
        v = value(s)
        if v is not None:
            out.setdefault(str(s.get(unit, s.get("id"))), []).append(float(v))
    return out


def counts_item(ctx: Context, counts: Mapping[str, int], stat: str, unit: str, note: str = "") -> Item:
    """Counts from the release beside a published table of ``paper.yaml`` ``tables`` (found by
    its ``stat`` path), each difference with its ``why`` from there: the cells the dataset
    card compares with the build's statistics (:func:`culturebench.cards.paper.table_cells`)."""
    from culturebench.cards.paper import table_cells

    table = ctx.published_table(stat)
    cells = sorted(table_cells(table, counts), key=lambda c: (-(counts.get(c["key"]) or 0), str(c["key"])))
    rows = [
        Row(
            str(c["key"]),
            float(c["built"] or 0),
            c["paper"],
            note=" ".join(str(c["why"] or "").split())[:300],
        )
        for c in cells
    ]
    if ctx.sample_release:
        note = (note + " The release given is a sample build: its counts are not the paper's.").strip()
    status = REPRODUCED if table.get("paper") else COMPUTED
    return Item(ctx.ref, ctx.title, status, rows, unit=unit, note=note)


def missing(ref: str, needs: str, note: str = "") -> Item:
    """An item whose runs were not given (``ref``: ``ctx.ref``)."""
    return Item(ref, "", MISSING, missing=[needs], note=note)


def _cell(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render(report: dict[str, Any], items: Sequence[Item]) -> str:
    """The report as Markdown: a status table, then each item with its rows."""
    lines = [
        f"# {report['dataset']}: the paper's tables and figures",
        "",
        f"Paper: {report.get('paper') or '-'}",
        "",
        "Runs: " + (", ".join(f"`{r['task']}` ({r['model']})" for r in report["runs"]) or "none given"),
        "",
        "| item | status | what |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {i.ref} | {i.status} | {i.title} |" for i in items]
    counts = ", ".join(f"{n} {s}" for s, n in report["status_counts"].items() if n)
    lines += ["", f"In all: {counts}.", ""]
    for item in items:
        lines += [
            f"## {item.ref}: {item.title}",
            "",
            f"Status: **{item.status}**" + (f" ({item.unit})" if item.unit else ""),
            "",
        ]
        if item.note:
            lines += [item.note, ""]
        if item.missing:
            lines += ["Needs: " + "; ".join(item.missing), ""]
        if item.rows:
            lines += [
                "| | ours | paper | difference | n | 95% CI | note |",
                "| --- | ---: | ---: | ---: | ---: | --- | --- |",
            ]
            for r in item.rows:
                ci = f"[{r.ci95[0]:.2f}, {r.ci95[1]:.2f}]" if r.ci95 else "-"
                n = "-" if r.n is None else str(r.n)
                numbers = f"{_cell(r.ours)} | {_cell(r.paper)} | {_cell(r.difference)}"
                lines.append(f"| {r.label} | {numbers} | {n} | {ci} | {r.note} |")
            lines.append("")
        for figure in item.figures:
            lines += [f"![{item.ref}]({figure})", ""]
    return "\n".join(lines)
