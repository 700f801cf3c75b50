"""Build the static site: find the inputs (:mod:`.inputs`), read them (:mod:`.views`,
:mod:`.release`), render the pages from the Jinja2 templates beside this module, copy the
assets, and publish the folder atomically (staged beside ``--out``, renamed into place; an
earlier site there is replaced only with ``overwrite``). Same inputs, same bytes: no clock, no
absolute paths and no random ids reach a page. Every value a template prints has its absolute
paths cut to their last part, each copied ``results.json`` has its paths made relative
(:mod:`.safety`), and every page carries the site's Content-Security-Policy."""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.outputs import OutputKind
from culturebench.site import charts
from culturebench.site.format import count, number, sort_key
from culturebench.site.inputs import find_inputs
from culturebench.site.release import ReleaseView, attach_url_check, read_release
from culturebench.site.safety import CSP, copy_json, copy_jsonl, portable, portable_text, read_json
from culturebench.site.samples import Thumbnails, run_images, sample_rows, write_data
from culturebench.site.views import (
    RunView,
    confusions,
    digest,
    distinct_models,
    read_run_view,
    slugify,
    unique_slugs,
)

SITE = OutputKind("site", ("index.html", "assets/site.js"))
HERE = Path(__file__).resolve().parent
MAX_CHARTS = 8  # breakdown charts per run page
MAX_PAIRS = 12  # compare pages per task
MAX_DISAGREEMENTS = 300  # samples listed on a compare page


@dataclass
class SiteSummary:
    """What was built: counts per page kind, files and bytes, and what was passed over."""

    out: Path
    runs: int = 0
    papers: int = 0
    releases: int = 0
    compares: int = 0
    samples: int = 0
    files: int = 0
    bytes: int = 0
    passed_over: list[str] = field(default_factory=list)


def build_site(
    folders: Sequence[str | Path],
    out: str | Path,
    *,
    overwrite: bool = False,
    progress: Callable[[str], None] | None = None,
) -> SiteSummary:
    """Build the site of ``folders`` into ``out`` (module docstring)."""
    from culturebench.outputs import staged_output

    found = find_inputs(folders)
    out = Path(out)
    summary = SiteSummary(out, passed_over=list(found.passed_over))
    with staged_output(out, SITE, overwrite=overwrite) as staged:
        site = _Site(staged, progress or (lambda _m: None))
        site.read(found.runs, found.papers, found.releases, found.url_checks, summary)
        site.render(summary)
    summary.files = sum(1 for p in out.rglob("*") if p.is_file())
    summary.bytes = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return summary


class _Site:
    def __init__(self, root: Path, say: Callable[[str], None]) -> None:
        from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
        from markupsafe import Markup

        from culturebench.text import web_url

        self.root = root
        self.say = say
        self.thumbs = Thumbnails(root)
        self.env = Environment(
            loader=FileSystemLoader(str(HERE / "templates")),
            autoescape=select_autoescape(["html", "j2"]),
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
            # no absolute path reaches a page (a message naming a folder, provenance); the
            # charts' SVG (Markup, made here) has none
            finalize=lambda v: v if isinstance(v, Markup) or not isinstance(v, str) else portable_text(v),
        )
        self.env.filters.update(
            number=number, count=count, sort_key=sort_key, tojson_sorted=_json, web_url=web_url
        )
        self.env.globals["csp"] = CSP
        self.runs: list[RunView] = []
        self.papers: list[dict[str, Any]] = []
        self.releases: list[ReleaseView] = []
        self.unmatched_checks: list[str] = []
        self._by_id: dict[str, dict[str, dict[str, Any]]] = {}  # run slug -> samples by id

    # ---------------------------------------------------------------- reading
    def read(
        self,
        runs: Sequence[Path],
        papers: Sequence[Path],
        releases: Sequence[Path],
        checks: Sequence[Path],
        summary: SiteSummary,
    ) -> None:
        for i, folder in enumerate(runs, start=1):
            self.say(f"reading run {i}/{len(runs)}: {folder.name}")
            self.runs.append(shown(folder, "run", read_run_view, folder))
        distinct_models(self.runs)
        self.runs.sort(key=lambda v: (v.dataset, v.task, v.model, v.slug))
        unique_slugs(self.runs)
        for folder in papers:
            report = read_json(folder / "paper_report.json")
            if not isinstance(report, dict) or not isinstance(report.get("items", []), list):
                raise CultureBenchError(
                    f"{folder / 'paper_report.json'}: not an `eval paper` report "
                    "(no object with a list of items)"
                )
            which = json.dumps(report.get("runs"), sort_keys=True, default=str)
            report["_slug"] = f"{slugify(str(report.get('dataset')))}-{digest(folder.name, which)}"
            report["_folder"] = folder
            self.papers.append(report)
        self.papers.sort(key=lambda r: (str(r.get("dataset")), r["_slug"]))
        for i, folder in enumerate(releases, start=1):
            self.say(f"reviewing release {i}/{len(releases)}: {folder}")
            self.releases.append(shown(folder, "release", read_release, folder, self.thumbs))
        self.releases.sort(key=lambda r: (r.dataset, r.version))
        self.unmatched_checks = [f.name for f in attach_url_check(self.releases, checks)]
        summary.runs, summary.papers, summary.releases = len(self.runs), len(self.papers), len(self.releases)

    # --------------------------------------------------------------- writing
    def page(self, rel: str, template: str, **context: Any) -> None:
        depth = rel.count("/")
        html = self.env.get_template(template).render(root="../" * depth, nav=self.nav(), rel=rel, **context)
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")

    def nav(self) -> dict[str, Any]:
        return {
            "papers": [(p["_slug"], f"{p.get('dataset')} paper") for p in self.papers],
            "releases": [(r.slug, r.title) for r in self.releases],
        }

    def render(self, summary: SiteSummary) -> None:
        assets = self.root / "assets"
        assets.mkdir()
        for name in ("site.js", "site.css"):
            shutil.copyfile(HERE / "assets" / name, assets / name)
        pairs = self.compare_pairs()
        for i, view in enumerate(self.runs, start=1):
            self.say(f"pages of run {i}/{len(self.runs)}: {view.title}")
            mine = [p for p in pairs if view in p]
            summary.samples += shown(view.folder, "run", self.run_pages, view, mine)
        for a, b in pairs:
            self.compare_page(a, b)
        summary.compares = len(pairs)
        for report in self.papers:
            shown(report["_folder"], "eval paper output", self.paper_page, report)
        for release in self.releases:
            shown(release.folder, "release", self.release_page, release)
        self.page(
            "index.html",
            "leaderboard.html.j2",
            runs=self.runs,
            datasets=sorted({v.dataset for v in self.runs}),
            languages=sorted({lang for v in self.runs for lang in v.languages}),
            kinds=sorted({v.kind for v in self.runs}),
            printed=self.printed_tables(),
            papers=self.papers,
            releases=self.releases,
            unmatched_checks=self.unmatched_checks,
            passed_over=summary.passed_over,
        )

    def run_pages(self, view: RunView, pairs: list[tuple[RunView, RunView]]) -> int:
        data = self.root / "data" / view.slug
        data.mkdir(parents=True, exist_ok=True)
        copy_json(view.folder / "results.json", data / "results.json", view.folder)
        if view.samples_file.is_file():
            copy_jsonl(view.samples_file, data / "samples.jsonl", view.folder)
        images, note = run_images(view, self.thumbs)
        rows, counts = sample_rows(view, images)
        if not view.languages:  # recorded outputs (`eval score`) name none: the samples do
            view.languages = sorted({row[2] for row in rows if row[2]})
        write_data(data / "samples.js", view.slug, rows)
        self.page(
            f"runs/{view.slug}.html",
            "run.html.j2",
            view=view,
            charts=self.run_charts(view),
            scalars=_scalar_blocks(view.metrics),
            counts=counts,
            samples=len(rows),
            pairs=[b if a is view else a for a, b in pairs],
            papers=[p for p in self.papers if p.get("dataset") == view.dataset],
            coverage=portable(view.results.get("coverage") or {}, view.folder),
        )
        self.page(
            f"samples/{view.slug}.html",
            "samples.html.j2",
            view=view,
            counts=counts,
            samples=len(rows),
            image_note=note,
            groups=sorted({r[3] for r in rows if r[3]}),
            languages=sorted({r[2] for r in rows if r[2]}),
        )
        return len(rows)

    def run_charts(self, view: RunView) -> list[dict[str, str]]:
        from culturebench.eval.run_report import breakdowns

        out = []
        for number_, (group, name, rows) in enumerate(breakdowns(view.metrics)[:MAX_CHARTS]):
            metric, points = _breakdown_points(rows)
            if not points:
                continue
            title = name if group == "all" else f"{group}: {name}"
            uid = f"c{digest(view.slug, str(number_))}"
            labels = [p["label"] for p in points]
            if charts.is_geographic(labels):
                values = {}
                for p in points:
                    code = charts.country_code(p["label"])
                    if code and p["value"] is not None:
                        values[code] = (p["value"], p["n"])
                spec, kind, marks = charts.map_spec(title, values, metric), "map", len(values)
            else:
                spec, kind, marks = charts.bars_spec(title, points, metric), "bars", len(points)
            out.append({"kind": kind, "title": title, "svg": charts.svg(spec, uid), "marks": str(marks)})
        for number_, (group, block) in enumerate(confusions(view.metrics)):
            uid = f"h{digest(view.slug, str(number_))}"
            title = "confusion: true vs predicted" + ("" if group == "all" else f" ({group})")
            spec = charts.heatmap_spec(title, block["labels"], block["columns"], block["matrix"])
            cells = len(block["labels"]) * len(block["columns"])
            out.append(
                {"kind": "confusion", "title": title, "svg": charts.svg(spec, uid), "marks": str(cells)}
            )
        return out

    def compare_pairs(self) -> list[tuple[RunView, RunView]]:
        by_task: dict[tuple[str, str], list[RunView]] = {}
        for view in self.runs:
            by_task.setdefault((view.dataset, view.task), []).append(view)
        pairs = []
        for views in by_task.values():
            combos = list(itertools.combinations(views, 2))[:MAX_PAIRS]
            pairs += [(x, y) if x.slug < y.slug else (y, x) for x, y in combos]  # file name: lower slug first
        return pairs

    def samples_of(self, view: RunView) -> dict[str, dict[str, Any]]:
        """:func:`samples_by_id`, read once per run however many comparisons it is in."""
        if view.slug not in self._by_id:
            self._by_id[view.slug] = samples_by_id(view)
        return self._by_id[view.slug]

    def compare_page(self, a: RunView, b: RunView) -> None:
        from culturebench.errors import CultureBenchError
        from culturebench.eval.compare import compare_runs

        try:
            rows, problem = compare_runs(a.folder, b.folder), ""
        except CultureBenchError as exc:
            rows, problem = [], str(exc)
        self.page(
            f"compare/{a.slug}--{b.slug}.html",
            "compare.html.j2",
            a=a,
            b=b,
            rows=rows,
            problem=problem,
            disagreements=_disagreements(a, b, self.samples_of(a), self.samples_of(b)),
        )

    def paper_page(self, report: dict[str, Any]) -> None:
        from culturebench.eval.paper_items import STATUSES, rejudged, status_kind

        # the status and claim each item's cells give (eval/claims.py), not the file's word for it
        items = [{**rejudged(item), "rows": _judged_rows(item)} for item in report.get("items") or []]
        counts = {s: sum(status_kind(str(i.get("status"))) == s for i in items) for s in STATUSES}
        report = {**report, "status_counts": counts}
        self.page(f"papers/{report['_slug']}.html", "paper.html.j2", report=report, items=items)

    def release_page(self, release: ReleaseView) -> None:
        self.page(f"releases/{release.slug}.html", "release.html.j2", release=release)

    def printed_tables(self) -> list[dict[str, Any]]:
        """The paper reports' tables with columns, printed and ours, each tagged by source."""
        out = []
        for report in self.papers:
            for item in report.get("items") or []:
                table = item.get("table")
                if isinstance(table, dict) and table.get("columns"):
                    out.append(
                        {
                            "dataset": report.get("dataset"),
                            "slug": report["_slug"],
                            "item": item,
                            "table": table,
                        }
                    )
        return out


def _judged_rows(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of an ``eval paper`` item, each with ``equal``: our cell equals the printed one
    at the printed precision, as ``eval paper`` judged it (:func:`item_precision`); None where
    there is nothing to compare."""
    from culturebench.eval.paper_items import Item, Row, Table, equal_at_printed, item_precision

    fields = set(Row.__dataclass_fields__)
    rows = [Row(**{k: v for k, v in r.items() if k in fields}) for r in item.get("rows") or []]
    table = item.get("table")
    shell = Item(str(item.get("ref")), str(item.get("title")), rows=rows)
    if isinstance(table, dict):
        shell.table = Table(digits=int(table.get("digits") or 0))
    compared = [r for r in rows if r.ours is not None and r.paper is not None]
    digits = item_precision(shell, compared)
    out = []
    for raw, row in zip(item.get("rows") or [], rows, strict=True):
        equal = None
        if row.ours is not None and row.paper is not None:
            equal = equal_at_printed(row.ours, row.paper, digits(row))
        out.append({**raw, "equal": equal})
    return out


def shown(folder: Path, what: str, read: Callable[..., Any], *args: Any) -> Any:
    """``read(*args)``, with an input that does not have the shape culturebench writes (a list where
    an object belongs, a string where a number does, a table that is not Parquet) reported as
    one line naming the folder and what was wrong, not as an unexpected error."""
    try:
        return read(*args)
    except CultureBenchError:
        raise
    except Exception as exc:
        why = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise CultureBenchError(
            f"{folder}: this {what} cannot be shown ({type(exc).__name__}: {why})"
        ) from None


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _breakdown_points(rows: Any) -> tuple[str, list[dict[str, Any]]]:
    """The first metric of a breakdown table and its points (label, value, lo, hi, n)."""
    from culturebench.eval.run_report import is_count_column, is_number, is_stat

    metric = None
    for values in rows.values():
        for key, value in values.items():
            if key not in ("ci95",) and not is_count_column(key) and (is_number(value) or is_stat(value)):
                metric = key
                break
        if metric:
            break
    if metric is None:
        return "", []
    points = []
    for label, values in rows.items():
        value = values.get(metric)
        ci = values.get("ci95")
        if is_stat(value):
            ci, value = value.get("ci95"), value.get("mean")
        lo, hi = (ci[0], ci[1]) if isinstance(ci, list | tuple) and len(ci) == 2 else (None, None)
        n = values.get("n") if is_number(values.get("n")) else values.get("n_dishes")
        points.append(
            {"label": str(label), "value": value if is_number(value) else None, "lo": lo, "hi": hi, "n": n}
        )
    return metric, points


def _scalar_blocks(metrics: Any) -> list[tuple[str, str, list[tuple[str, Any]]]]:
    """Blocks of plain figures that are neither statistics nor breakdowns (e.g. how often a
    model names the country of the prompt's language): ``(group, name, [(key, value)])``."""
    out = []

    def scalar(v: Any) -> bool:
        return v is None or isinstance(v, str | int | float | bool)

    def visit(group: str, block: Any) -> None:
        for name, value in block.items():
            if (
                isinstance(value, dict)
                and value
                and all(scalar(v) for v in value.values())
                and "mean" not in value
            ) and not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value.values()):
                out.append((group, name, sorted(value.items())))

    visit("all", metrics)
    for key, value in metrics.items():
        if isinstance(value, dict):
            visit(str(key), value)
    return out


def samples_by_id(view: RunView) -> dict[str, dict[str, Any]]:
    """A run's samples by id (the first line of an id; lines that do not read are left out,
    as the samples page counts them)."""
    out: dict[str, dict[str, Any]] = {}
    for _, sample in view.lines:
        if sample is not None and isinstance(sample.get("id"), str):
            out.setdefault(sample["id"], sample)
    return out


def _disagreements(
    a: RunView, b: RunView, left: dict[str, dict[str, Any]], right: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """Samples both runs have (same id, ``left`` and ``right`` by id) whose status or score
    differ, first ones first."""
    from culturebench.site.samples import score_of, status

    rows = []
    for sample_id in sorted(set(left) & set(right)):
        x, y = left[sample_id], right[sample_id]
        sx, sy = score_of(x), score_of(y)
        state_x, state_y = status(x), status(y)
        if (state_x, sx) != (state_y, sy):
            rows.append(
                {
                    "id": sample_id,
                    "prompt": str(x.get("prompt", ""))[:300],
                    "a": {"output": str(x.get("output", ""))[:300], "status": state_x, "score": sx},
                    "b": {"output": str(y.get("output", ""))[:300], "status": state_y, "score": sy},
                }
            )
            if len(rows) >= MAX_DISAGREEMENTS:
                break
    return rows
