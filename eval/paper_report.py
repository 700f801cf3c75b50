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
95% interval (:func:`culturebench.eval.metrics.mean_interval`: Wilson for rates, the bootstrap
only at 30 units or more); an item whose runs are missing says which runs it needs.

"reproduced" is a finding, not a claim: whatever status an item's function gives, a computed
item is judged by its rows and its table (:func:`judge_status`, by the one rule of
:mod:`culturebench.eval.claims`). It is ``reproduced`` only when EVERY cell the paper prints for
the models it has runs of has our number beside it (:func:`printed_without_run`) and every one
equals the printed value at the printed precision (:func:`printed_decimals`); otherwise
``computed, differs by X`` (X the largest difference) or ``computed, printed cells without a
run``, and the item says ``N of M cells equal, K without a run``. An item that claims a
reproduction with no cell to compare (no run is of a model the paper prints) is ``computed,
no printed model to compare``. The report opens with the coverage of every run it reads
(:mod:`culturebench.eval.coverage`) and of the release it was given.

Which model a run is (:class:`ModelId`: model id, revision, weights sha256, identity
options) decides what it is compared with: ``Context.paper_model`` maps it to the paper's
name through the ``models:`` aliases, ``Context.printed`` gives the printed row only for that
model, and ``Context.runs_by_model`` / ``Context.columns`` group runs by model, so that an
item's :class:`Table` shows the printed models and each model with runs side by side. Two runs
of one task and one model with the same setup are an error (:func:`check_duplicates`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.eval.model_id import ALIAS_KEYS, ModelId, base_name

# the items and their judging live in paper_items (shared with the results site)
from culturebench.eval.paper_items import (  # noqa: F401  (re-exported: the items live there)
    COMPUTED,
    DIFFERS,
    MISSING,
    NO_PRINTED,
    NO_PRINTED_NUMBER,
    NOT_A_RESULT,
    NOT_REPRODUCIBLE,
    OURS,
    PAPER,
    PARTIAL,
    REPRODUCED,
    STATUSES,
    Column,
    Item,
    Row,
    Table,
    equal_at_printed,
    item_precision,
    judge_status,
    printed_decimals,
    printed_without_run,
    rejudged,
    status_kind,
)
from culturebench.eval.records import Results, Sample
from culturebench.jsonsafe import json_text
from culturebench.outputs import OutputKind


def model_aliases(paper: Mapping[str, Any]) -> dict[str, list[Any]]:
    """``paper.yaml`` ``models:``, checked: each of the paper's model names maps to a list of
    aliases, each a Hub id (or its last part) or a mapping of :data:`ALIAS_KEYS`."""
    models = paper.get("models") or {}
    if not isinstance(models, dict):
        raise CultureBenchError("paper.yaml models: expected a mapping of the paper's model names to aliases")
    for name, aliases in models.items():
        for alias in aliases if isinstance(aliases, list) else [aliases]:
            if isinstance(alias, str):
                continue
            if not isinstance(alias, dict) or not alias or set(alias) - set(ALIAS_KEYS):
                raise CultureBenchError(
                    f"paper.yaml models: {name}: alias {alias!r} is neither a Hub id nor a mapping of "
                    f"{', '.join(ALIAS_KEYS)}"
                )
    return {str(k): v if isinstance(v, list) else [v] for k, v in models.items()}


def paper_name(identity: ModelId, paper: Mapping[str, Any]) -> str | None:
    """The paper's name of a model (:meth:`Context.paper_model`), or None."""
    for name, aliases in model_aliases(paper).items():
        if identity.name.lower() == name.lower() or any(identity.matches(a) for a in aliases):
            return name
    return None


def model_labels(runs: Sequence[Run], paper: Mapping[str, Any] | None) -> dict[tuple[Any, ...], str]:
    """A label per model of ``runs`` (by :attr:`ModelId.key`): the paper's name where an alias
    matches, else :attr:`ModelId.name`; models that would share a label are told apart by
    :attr:`ModelId.detail` (``tiny (3fa2c1d0)``), and numbered if that is not enough."""
    models: dict[tuple[Any, ...], ModelId] = {}
    for run in runs:
        models.setdefault(run.identity.key, run.identity)
    plain = {k: paper_name(m, paper or {}) or m.name for k, m in models.items()}
    shared = Counter(plain.values())
    labels = {k: f"{v} ({models[k].detail})" if shared[v] > 1 else v for k, v in plain.items()}
    still = Counter(labels.values())
    seen: Counter[str] = Counter()
    for key, label in labels.items():
        if still[label] > 1:
            seen[label] += 1
            labels[key] = f"{label} #{seen[label]}"
    return labels


@dataclass
class Run:
    """A finished run folder: what it ran and its samples (read on demand)."""

    folder: Path
    task: str
    model: str
    config: str | None
    results: Results
    _samples: list[Sample] | None = field(default=None, repr=False)
    identity: ModelId = field(default_factory=ModelId)  # which model it is
    # its coverage checked against its samples.jsonl (:func:`load_runs`; None: not read here)
    coverage: dict[str, Any] | None = field(default=None, repr=False)

    @classmethod
    def from_results(cls, folder: Path, results: Results) -> Run:
        """A run from its ``results.json`` content (read from ``folder`` or just scored)."""
        prov = results["provenance"]
        identity = ModelId.from_provenance(prov)
        model = prov.get("model") or {}
        name = model.get("model") if isinstance(model, dict) else model
        return cls(
            Path(folder), prov["task"], str(name or "-"), prov.get("config"), results, identity=identity
        )

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

    @property
    def setup(self) -> dict[str, Any]:
        """What tells two runs of one task and one model apart (never duplicates): the task
        options (without those that only locate an input), the languages, the config, the
        matcher (``eval score --matcher llm``) and an analysis task's inputs."""
        prov = self.results.get("provenance", {})
        located = set(prov.get("location_options") or [])
        out: dict[str, Any] = {
            "options": {k: v for k, v in self.options.items() if k not in located},
            "languages": prov.get("languages"),
            "config": self.config,
            "inputs": prov.get("inputs"),
        }
        matcher = prov.get("matcher")
        if isinstance(matcher, dict):
            judge = matcher.get("judge") or {}
            out["matcher"] = [matcher.get("matcher"), ModelId.from_provenance({"model": judge}).key]
        return {k: v for k, v in out.items() if v}

    @property
    def variant(self) -> list[str]:
        """:attr:`setup` in words, one part each (``dish_name=True``, ``languages=uk``)."""
        setup = self.setup
        parts = [f"{k}={v}" for k, v in sorted(setup.get("options", {}).items())]
        if setup.get("languages"):
            parts.append("languages=" + ",".join(map(str, setup["languages"])))
        if setup.get("config"):
            parts.append(f"config={setup['config']}")
        if setup.get("matcher"):
            judge = (self.results["provenance"]["matcher"].get("judge") or {}).get("model")
            parts.append(f"matcher={setup['matcher'][0]}" + (f" ({base_name(str(judge))})" if judge else ""))
        if setup.get("inputs"):
            from culturebench.hashing import sha256_text

            parts.append(
                "inputs " + sha256_text(json.dumps(setup["inputs"], sort_keys=True, default=str))[:8]
            )
        return parts

    def samples(self) -> list[Sample]:
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
    _label_cache: dict[tuple[Any, ...], str] | None = field(default=None, init=False, repr=False)

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

    # ------------------------------------------------------------------ which model a run is
    def paper_model(self, model: str | Run | ModelId) -> str | None:
        """The paper's name for a run's model (a :class:`Run`, its :class:`ModelId`, or a model
        id), by the ``models:`` aliases of ``paper.yaml`` (:meth:`ModelId.matches`: the last
        path part of a Hub id or folder, case-insensitive, or a mapping that also pins a
        revision, a weights sha256 or an `eval score` layout) or the paper's name itself; None
        when it is none of the paper's models."""
        identity = model.identity if isinstance(model, Run) else model
        if isinstance(identity, str):
            identity = ModelId(identity)
        return paper_name(identity, self.paper)

    def printed(self, table: Mapping[str, Any] | None, run: Run) -> Any:
        """The printed row of ``table`` (``{paper name: row}``) for the run's model, or None
        when its model is not one the table prints: a run is compared with a printed row only
        when it is that model."""
        name = self.paper_model(run)
        return None if name is None or not table else table.get(name)

    def status(self, runs: Sequence[Run]) -> str:
        """``reproduced`` when one of the runs is of a model the paper names, else ``computed``:
        a claim, which :func:`judge_status` then checks against the item's compared cells."""
        return REPRODUCED if any(self.paper_model(r) for r in runs) else COMPUTED

    def model_label(self, run: Run) -> str:
        """The run's model in the report: the paper's name when an alias matches, else the last
        part of its model path or id; two different models of one name among the runs are told
        apart by a short weights sha256 (or revision, or full id): ``tiny (3fa2c1d0)``."""
        labels = self._labels()
        if run.identity.key not in labels:
            return model_labels([run], self.paper)[run.identity.key]
        return labels[run.identity.key]

    def _labels(self) -> dict[tuple[Any, ...], str]:
        if self._label_cache is None:
            self._label_cache = model_labels(self.runs, self.paper)
        return self._label_cache

    def models(self) -> dict[str, ModelId]:
        """Every model that has runs, by its label (:meth:`model_label`), in the order the
        runs were given."""
        out: dict[str, ModelId] = {}
        for run in self.runs:
            out.setdefault(self.model_label(run), run.identity)
        return out

    def task_of(self, run: Run) -> str:
        """The run's task by its current name (an old name, :attr:`Task.aliases`, mapped)."""
        from culturebench.eval.tasks import canonical_name

        return canonical_name(self.dataset, run.task)

    def group_by_model(self, runs: Sequence[Run]) -> dict[str, list[Run]]:
        """``runs`` by model, ``{label: runs}`` in the order given: every run of one model under
        its label (several runs of one task there differ in options, languages or matcher: runs
        that do not are refused by :func:`load_runs`)."""
        out: dict[str, list[Run]] = {}
        for run in runs:
            out.setdefault(self.model_label(run), []).append(run)
        return out

    def runs_by_model(self, *tasks: str, **options: Any) -> dict[str, list[Run]]:
        """Runs of ``tasks`` (all runs when none is named) whose options include ``options``
        (as :meth:`runs_of`), by model: ``{label: runs}`` (:meth:`group_by_model`)."""
        runs = [r for t in tasks for r in self.runs_of(t, **options)] if tasks else list(self.runs)
        return self.group_by_model([r for r in self.runs if any(r is x for x in runs)])

    def columns(self, runs: Sequence[Run]) -> dict[str, list[Run]]:
        """``runs`` as columns of a table, ``{label: runs}`` holding at most one run per task: a
        model's runs, or, for a model with several runs of one task, one column per setup
        (:attr:`Run.variant`, only the parts that differ: ``tiny [dish_name=True]``)."""
        out: dict[str, list[Run]] = {}
        for label, group in self.group_by_model(runs).items():
            tasks = [self.task_of(r) for r in group]
            if len(set(tasks)) == len(tasks):
                out[label] = group
                continue
            common = set.intersection(*(set(r.variant) for r in group))
            for run in group:
                parts = [p for p in run.variant if p not in common]
                out.setdefault(f"{label} [{', '.join(parts)}]" if parts else label, []).append(run)
        return out

    def table(
        self, printed: Mapping[str, Mapping[str, Any]] | None = None, *, unit: str = "", digits: int = 2
    ) -> Table:
        """A :class:`Table` with a column for every model of ``printed`` (``{paper name: {row:
        cell}}``), for :meth:`add_runs` to add ours beside."""
        return Table(unit=unit, digits=digits).add_printed(printed or {})

    def add_runs(self, table: Table, label: str, runs: Sequence[Run], cells: Mapping[str, Any]) -> Column:
        """Our column for a model (``label``, e.g. a key of :meth:`columns`) from its ``runs``,
        marked with the paper's name of the model when it is one the paper prints."""
        model = next((m for r in runs if (m := self.paper_model(r))), None)
        return table.add(label, cells, source=OURS, model=model, runs=runs)

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


def load_runs(folders: Sequence[Path], dataset: str, paper: Mapping[str, Any] | None = None) -> list[Run]:
    """Finished runs of ``dataset``; a folder of another dataset or an unfinished run is an
    error naming it, and so are two runs of one task and one model with the same setup
    (:func:`check_duplicates`; ``paper``: the catalogue, whose ``models:`` name the model) and a
    run whose ``results.json`` claims more than its ``samples.jsonl`` holds
    (:func:`~culturebench.eval.coverage.checked_coverage`)."""
    from culturebench.eval.coverage import checked_coverage
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
        run = Run.from_results(folder, results)
        run.coverage = checked_coverage(folder, results)
        runs.append(run)
    check_duplicates(runs, dataset, paper)
    return runs


def check_duplicates(runs: Sequence[Run], dataset: str, paper: Mapping[str, Any] | None = None) -> None:
    """Two runs of one task and one model (:attr:`ModelId.key`) with the same options,
    languages, config and matcher (:attr:`Run.setup`) would fill the same cell of a table:
    an error naming both folders. Runs that differ in any of them are not duplicates."""
    from culturebench.eval.tasks import canonical_name

    seen: dict[tuple[Any, ...], Run] = {}
    for run in runs:
        task = canonical_name(dataset, run.task)
        key = (task, run.identity.key, json.dumps(run.setup, sort_keys=True, default=str))
        if key in seen:
            label = model_labels(runs, paper)[run.identity.key]
            of = f" of model {label}" if run.identity.model != "-" else ""
            raise CultureBenchError(
                f"{seen[key].folder} and {run.folder} are both {dataset}/{task}{of} (same options); give one"
            )
        seen[key] = run


def model_label(dataset: str, prov: Mapping[str, Any]) -> str | None:
    """The label of a run's model (``results.json``'s ``model_label``, written with the run):
    the paper's name where one of its ``models:`` aliases matches (the authors' ``gpt35_*``
    files are "GPT 3.5"), else the model's short name; None for a run with no model."""
    if not prov.get("model"):
        return None
    identity = ModelId.from_provenance(prov)
    try:
        paper = load_catalogue(dataset)[0]
    except Exception:  # a dataset without a paper catalogue here
        paper = {}
    return paper_name(identity, paper) or identity.name


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
    check_duplicates([r for r in runs if r.results], dataset, paper)  # (unread runs: the item checks)
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
    runs = load_runs(folders, dataset, paper)
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
            "runs": [
                {
                    "folder": str(r.folder),
                    "task": r.task,
                    "model": r.model,
                    "label": ctx.model_label(r),
                    "identity": asdict(r.identity),
                }
                for r in runs
            ],
            "release": release_ref or None,
            "inputs": {k: str(v) for k, v in (inputs or {}).items()},
            "items": [asdict(i) for i in items],
            "status_counts": {s: sum(status_kind(i.status) == s for i in items) for s in STATUSES},
        }
        report = {"coverage": report_coverage(runs, release_ref), **report}
        (staged / "paper_report.json").write_text(json_text(report, indent=2, default=str), "utf-8")
        (staged / "paper_report.md").write_text(render(report, items), "utf-8")
    return report


PAPER_REPORT = OutputKind("paper-report", ("paper_report.json",))


def report_coverage(runs: Sequence[Run], release: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the report measured: the release given (and whether it is the shipped sample) and
    each run's coverage (:func:`culturebench.eval.coverage.checked_coverage`: checked against
    its samples.jsonl when :func:`load_runs` read it)."""
    from culturebench.eval.coverage import coverage_of

    given = None
    if release:
        sample = release.get("sample")
        given = {**release, "build": None if sample is None else ("sample" if sample else "full")}
    return {
        "release": given,
        "runs": [
            {"folder": str(r.folder), "task": r.task, **(r.coverage or coverage_of(r.results))}
            for r in runs
            if r.results
        ],
    }


def coverage_markdown(coverage: Mapping[str, Any]) -> list[str]:
    """The report's coverage: the release given, then one line per run (rows used of the
    release's, how --limit chose them, seeds, sample or full release, sampling and what of it
    is assumed, parser versions)."""
    from culturebench.eval.coverage import limit_text
    from culturebench.text import md_row

    lines = ["## Coverage", ""]
    release = coverage.get("release")
    if release:
        build = {"sample": "the SHIPPED SAMPLE: its counts are not the paper's", "full": "a full build"}.get(
            str(release.get("build")), "build not known"
        )
        lines += [
            f"Release given: {release.get('location')} (version {release.get('version')}), {build}.",
            "",
        ]
    else:
        lines += ["Release given: none (items that need it say so).", ""]
    runs = coverage.get("runs") or []
    if not runs:
        return [*lines, "Runs: none given.", ""]
    lines += [
        "| run | rows used | limit | release | seeds | sampling (assumed) | parsers |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for run in runs:
        rows = run.get("rows") or {}
        release_of = run.get("release") or {}
        of = rows.get("release") if rows.get("release") is not None else release_of.get("rows")
        used = "-" if rows.get("used") is None else f"{rows['used']} of {'?' if of is None else of}"
        if run.get("partial"):  # what its samples.jsonl does not hold (coverage.checked_coverage)
            used += " PARTIAL: " + "; ".join(run["partial"])
        elif "checked" in run and run["checked"] is None:
            used += " (not checked: no samples.jsonl)"
        seeds = ", ".join(map(str, run.get("seeds") or [])) or "one pass"
        sampling = ", ".join(f"{k} {v}" for k, v in (run.get("sampling") or {}).items()) or "-"
        assumed = run.get("sampling_assumed")
        if assumed:
            sampling += f" (assumed: {', '.join(map(str, assumed))})"
        elif assumed is None and run.get("sampling_source"):
            sampling += " (assumed: not declared)"
        parsers = run.get("parsers")
        used_parsers = run.get("parsers_used") or list(parsers or {})
        parser_text = (
            ", ".join(f"{p} {parsers.get(p, '(unversioned)')}" for p in used_parsers)
            if parsers
            else "not recorded"
        )
        cells = [f"{run['task']} ({Path(run['folder']).name})", used, limit_text(run) or "none",
                 str(release_of.get("build") or "-"), seeds, sampling, parser_text]  # fmt: skip
        lines.append(md_row(cells))
    return [*lines, ""]


def check_inputs(given: dict[str, Path], declared: dict[str, Any], where: Path) -> None:
    """Every ``--input KEY=PATH`` names an input the paper's items read (``inputs:`` of
    ``paper.yaml``) and an existing file, and is read once by the input's own reader (``read:
    module:function``) before any item runs: an unknown key or a file of the wrong kind is an
    error, not silently ignored when no item reaches it."""
    import importlib

    from culturebench.errors import UsageError

    for key, path in given.items():
        if key not in declared:
            known = ", ".join(sorted(declared)) or "none"
            raise UsageError(f"--input {key}={path}: unknown input key {key!r} (this paper reads: {known})")
        if not path.exists():
            raise UsageError(f"--input {key}={path}: no such file")
        if path.is_dir() and not declared[key].get("folder", False):
            raise UsageError(f"--input {key}={path}: a folder, expected a file")
        if not path.is_dir() and declared[key].get("folder", False):
            raise UsageError(f"--input {key}={path}: a file, expected a folder")
        reader = declared[key].get("read")
        if not reader:
            raise CultureBenchError(f"{where}: input {key!r} declares no read: function to check it with")
        module, _, name = str(reader).partition(":")
        getattr(importlib.import_module(module), name)(path)


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
    return judge_status(item, printed_model=any(ctx.paper_model(r) for r in ctx.runs if r.results))


def percent(value: float | None) -> float | None:
    """A share as a percentage (None stays None)."""
    return None if value is None else 100 * value


def percent_ci(ci: tuple[float, float] | None) -> tuple[float, float] | None:
    """An interval of shares as percentages."""
    return None if ci is None else (100 * ci[0], 100 * ci[1])


def unit_mean(
    samples: Sequence[Mapping[str, Any]],
    value: Callable[[Mapping[str, Any]], float | None],
    unit: str = "row_id",
) -> tuple[float | None, tuple[float, float] | None, int]:
    """Mean of ``value`` over samples, a 95% interval over ``unit`` (the question, the dish:
    every prompt of a drawn unit moves with it; :func:`~culturebench.eval.metrics.mean_interval`:
    Wilson for rates, the bootstrap at 30 units or more; None where there is none) and the
    number of units."""
    from culturebench.eval.metrics import mean_interval

    pairs = [(v, s.get(unit, s.get("id"))) for s in samples if (v := value(s)) is not None]
    if not pairs:
        return None, None, 0
    got = mean_interval([float(v) for v, _ in pairs], units=[u for _, u in pairs])
    ci = None if got.lo is None or got.hi is None else (got.lo, got.hi)
    return got.mean, ci, got.units


def by_unit(
    samples: Sequence[Mapping[str, Any]],
    value: Callable[[Mapping[str, Any]], float | None],
    unit: str = "row_id",
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


def _ci_text(ci: Sequence[float | None] | None) -> str:
    """A row's 95% interval, or ``-`` where it has none (absent, or null bounds)."""
    import math

    if not ci or len(ci) != 2:
        return "-"
    low, high = ci
    if low is None or high is None or not (math.isfinite(float(low)) and math.isfinite(float(high))):
        return "-"
    return f"[{float(low):.2f}, {float(high):.2f}]"


def _cell(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _run_text(run: Mapping[str, Any]) -> str:
    """A run as the report's "Runs:" line names it (names escaped, :func:`md_cell`)."""
    from culturebench.text import md_cell

    label = run.get("label") or run["model"]
    shown = f" ({md_cell(run['model'])}" + (f", as {md_cell(label)}" if label != run["model"] else "") + ")"
    return f"{md_cell(run['task'])}{shown}"


def _table_cell(column: Column, row: str, digits: int) -> str:
    value = column.cells.get(row)
    if value is None:
        return "-"
    text = str(value) if isinstance(value, int) else f"{value:.{digits}f}"
    pm = column.pm.get(row)
    return text if pm is None else f"{text} ± {pm:.{digits}f}"


def render_table(table: Table) -> list[str]:
    """A :class:`Table` in Markdown: one line per row and a column per model, or, when there
    are more models than rows, one line per model (``paper``: printed; ``ours``: from runs).
    Every cell goes through :func:`~culturebench.text.md_cell` (a row label such as
    ``origin-vqa | name`` stays one cell)."""
    from culturebench.text import md_row

    lines = [
        "Models side by side" + (f" ({table.unit})" if table.unit else "")
        + ": the paper's printed columns and ours from the runs.",
        "",
    ]  # fmt: skip
    if len(table.columns) > len(table.rows):
        lines += [md_row(["model", "source", *table.rows]), "| --- | --- |" + " ---: |" * len(table.rows)]
        for c in table.columns:
            lines.append(
                md_row([c.label, c.source, *(_table_cell(c, row, table.digits) for row in table.rows)])
            )
    else:
        lines += [
            md_row(["", *(c.heading for c in table.columns)]),
            "| --- |" + " ---: |" * len(table.columns),
        ]
        for row in table.rows:
            lines.append(md_row([row, *(_table_cell(c, row, table.digits) for c in table.columns)]))
    return [*lines, ""]


def render(report: dict[str, Any], items: Sequence[Item]) -> str:
    """The report as Markdown: a status table, then each item with its rows (cells escaped by
    :func:`~culturebench.text.md_cell`)."""
    from culturebench.text import md_cell, md_row

    lines = [
        f"# {md_cell(report['dataset'])}: the paper's tables and figures",
        "",
        f"Paper: {md_cell(report.get('paper') or '-')}",
        "",
    ]
    if report.get("coverage"):
        lines += coverage_markdown(report["coverage"])
    lines += [
        "Runs: " + (", ".join(_run_text(r) for r in report["runs"]) or "none given"),
        "",
        "A status `reproduced` means every printed cell (of the models with runs) has our number and "
        "each equals the printed value at the printed precision; otherwise an item reads `N of M cells "
        "equal, K without a run` (M printed, K of them with no number of ours), and `computed, differs "
        "by X` gives the largest difference.",
        "",
        "| item | status | cells equal at the printed precision | what |",
        "| --- | --- | --- | --- |",
    ]
    lines += [md_row([i.ref, i.status, i.equal_text or "-", i.title]) for i in items]
    counts = "; ".join(f"{n} {s}" for s, n in report["status_counts"].items() if n)  # statuses hold commas
    lines += ["", f"In all: {counts}.", ""]
    for item in items:
        lines += [
            f"## {md_cell(item.ref)}: {md_cell(item.title)}",
            "",
            f"Status: **{item.status}**"
            + (f" ({item.equal_text} at the printed precision)" if item.equal_text else "")
            + (f" ({item.unit})" if item.unit else ""),
            "",
        ]
        if item.note:
            lines += [item.note, ""]
        if item.missing:
            lines += ["Needs: " + "; ".join(item.missing), ""]
        if item.table is not None and item.table.columns:
            lines += render_table(item.table)
        if item.rows:
            lines += [
                "| | ours | paper | difference | n | 95% CI | note |",
                "| --- | ---: | ---: | ---: | ---: | --- | --- |",
            ]
            for r in item.rows:
                ci = _ci_text(r.ci95)
                n = "-" if r.n is None else str(r.n)
                numbers = [_cell(r.ours), _cell(r.paper), _cell(r.difference)]
                lines.append(md_row([r.label, *numbers, n, ci, r.note]))
            lines.append("")
        for figure in item.figures:
            lines += [f"![{item.ref}]({figure})", ""]
    return "\n".join(lines)
