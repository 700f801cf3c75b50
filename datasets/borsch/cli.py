"""BORSCH commands: ``culturebench eval borsch-description`` (§5 as one resumable pipeline),
``culturebench borsch wikidata`` / ``wikidata-diff`` (§3.1), and the §4.2-4.3 / App. C analyses
of a corpus count (``culturebench corpus code-mixing``, ``cooccurrence``, ``sample``,
``annotations``, ``captions``; :mod:`culturebench.datasets.borsch.corpus_analyses`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from culturebench.cli.errors import claim_file
from culturebench.cli.options import (
    DEFAULT_ENGINE,
    DEFAULT_SOURCE,
    BaseUrlOption,
    BatchSizeOption,
    DatasetSource,
    DtypeOption,
    EngineChoice,
    FileOverwriteOption,
    GuidanceOption,
    MaxNewTokensOption,
    SizeOption,
    StepsOption,
    deprecated_alias,
    with_dataset_source,
)
from culturebench.cli.output import console
from culturebench.cli.progress import progress_bar
from culturebench.datasets.borsch.wikidata import DEFAULT_ENDPOINT
from culturebench.errors import UsageError
from culturebench.eval.backends import DEFAULT_BACKEND, shared_flags
from culturebench.jsonsafe import json_text
from culturebench.sparql import MAX_BYTES, MAX_PAGES, MAX_ROWS


def register(eval_app: typer.Typer) -> None:
    """Add this dataset's commands to ``culturebench eval``."""
    eval_app.command("borsch-description")(description_cmd)


def register_corpus(corpus_app: typer.Typer) -> None:
    """Add the analyses of a ``culturebench corpus count`` to ``culturebench corpus``."""
    corpus_app.command("code-mixing")(code_mixing_cmd)
    corpus_app.command("cooccurrence")(cooccurrence_cmd)
    corpus_app.command("sample")(sample_cmd)
    corpus_app.command("annotations")(annotations_cmd)
    corpus_app.command("captions")(captions_cmd)


def maintain(group: typer.Typer) -> None:
    """Add the maintainer commands: ``culturebench borsch wikidata`` and ``wikidata-diff``."""
    group.command("wikidata")(wikidata_cmd)
    group.command("wikidata-diff")(wikidata_diff_cmd)


@deprecated_alias("--cache", "cache_dir")
def wikidata_cmd(
    lang: Annotated[str, typer.Option(help="Label language: ru, uk or en.")],
    out: Annotated[Path, typer.Option(help="Output folder (candidates.parquet, wikidata.json).")],
    endpoint: Annotated[str, typer.Option(help="SPARQL endpoint URL.")] = DEFAULT_ENDPOINT,
    cache_dir: Annotated[
        Path | None,
        typer.Option("--cache-dir", help="Cache folder of answers (default: the culturebench cache)."),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache.")] = False,
    refresh: Annotated[bool, typer.Option(help="Ask again even when the cache holds an answer.")] = False,
    page_size: Annotated[int, typer.Option(min=1, help="Rows per request (LIMIT/OFFSET pages).")] = 10_000,
    timeout: Annotated[
        float, typer.Option(min=1, help="Seconds per request, wall clock (headers, body, redirects).")
    ] = 60.0,
    retries: Annotated[int, typer.Option(min=0, help="Retries on 429, 5xx and timeouts.")] = 4,
    contact: Annotated[
        str, typer.Option(help="Contact (email or URL) for the User-Agent, as Wikidata's policy asks.")
    ] = "https://github.com/culturebench/culturebench",
    overwrite: Annotated[bool, typer.Option(help="Replace an existing --out folder.")] = False,
    allow: Annotated[
        list[str] | None,
        typer.Option(
            "--allow",
            help="Private address/network the SPARQL client may contact, e.g. 127.0.0.1 for a local "
            "endpoint (repeatable); redirects elsewhere off the public internet are refused.",
        ),
    ] = None,
    max_bytes: Annotated[
        int, typer.Option(min=1, help="Largest answer accepted, in bytes (64 MiB by default).")
    ] = MAX_BYTES,
    max_pages: Annotated[int, typer.Option(min=1, help="Most pages fetched for the query.")] = MAX_PAGES,
    max_rows: Annotated[int, typer.Option(min=1, help="Most rows accepted for the query.")] = MAX_ROWS,
) -> None:
    """Food dishes on Wikidata with their ISO countries of origin (BORSCH §3.1, App. L), by the
    paper's query (versioned in datasets/borsch/wikidata_dishes.rq), as a candidate table."""
    from culturebench.cache_dirs import cache_root
    from culturebench.datasets.borsch.wikidata import fetch_candidates

    cache_dir = None if no_cache else (cache_dir or cache_root() / "sparql")
    with progress_bar() as bar:
        job = bar.add_task(f"Wikidata dishes ({lang})", total=None)
        record = fetch_candidates(
            endpoint, lang, out, cache_dir=cache_dir, refresh=refresh, page_size=page_size,
            timeout=timeout, retries=retries, contact=contact, overwrite=overwrite,
            progress=lambda n: bar.update(job, completed=n), allow=tuple(allow or ()),
            max_bytes=max_bytes, max_pages=max_pages, max_rows=max_rows,
        )  # fmt: skip
    console.print(
        f"{record['rows']} candidates ({record['with_origin']} with an ISO origin) in {record['pages']} "
        f"page(s), {record['pages_from_cache']} from the cache; query sha256 {record['query_sha256'][:12]}; "
        f"wrote {out}"
    )


@with_dataset_source
def wikidata_diff_cmd(
    candidates: Annotated[Path, typer.Argument(help="A `culturebench borsch wikidata` output folder.")],
    out: Annotated[Path, typer.Option(help="Report folder (wikidata_diff.json, wikidata_diff.md).")],
    source: DatasetSource = DEFAULT_SOURCE,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing --out folder.")] = False,
) -> None:
    """What a refresh from Wikidata would change in a release (new dishes, changed origins,
    dishes no longer returned), as a report to review. It changes nothing itself."""
    from culturebench.datasets.borsch.wikidata import refresh_report

    counts = refresh_report(
        candidates, out, **source.as_kwargs(), overwrite=overwrite,
    )  # fmt: skip
    console.print(
        f"same {counts['same']}, origins differ {counts['origins_differ']}, new {counts['new']}, "
        f"no longer returned {counts['not_returned']}, ambiguous {counts['ambiguous']}; "
        f"review {out / 'wikidata_diff.md'}"
    )


@with_dataset_source
def description_cmd(
    model: Annotated[str, typer.Option(help="The model that describes the dishes (Hub id or folder).")],
    t2i: Annotated[str, typer.Option(help="Text-to-image model (paper: black-forest-labs/FLUX.1-dev).")],
    dinov2: Annotated[str, typer.Option(help="DINOv2 model (paper: facebook/dinov2-giant).")],
    out: Annotated[Path, typer.Option(help="Pipeline folder (one sub-folder per stage; reruns resume).")],
    source: DatasetSource = DEFAULT_SOURCE,
    config: Annotated[str, typer.Option(help="parallel (paper), ru or uk.")] = "parallel",
    lang: Annotated[list[str] | None, typer.Option(help="Language(s) to prompt in (default: all).")] = None,
    limit: Annotated[
        int | None,
        typer.Option(min=1, help="Only N dishes, spread over the gold countries (as `eval run --limit`)."),
    ] = None,
    backend: Annotated[
        str, typer.Option(help="Describer backend (a text backend, see `eval backends`).")
    ] = DEFAULT_BACKEND["text"],
    translator: Annotated[
        str | None,
        typer.Option(
            help="Model that translates descriptions to English ('none': the describer writes English)."
        ),
    ] = None,
    translator_backend: Annotated[
        str, typer.Option(help="Translator backend (a text backend).")
    ] = DEFAULT_BACKEND["text"],
    t2i_backend: Annotated[
        str, typer.Option(help="Text-to-image backend (see `eval backends`).")
    ] = DEFAULT_BACKEND["image"],
    images_per_dish: Annotated[int, typer.Option(min=1, help="Images per description (seeds 0..N-1).")] = 1,
    size: SizeOption = DEFAULT_ENGINE.size,
    steps: StepsOption = None,
    guidance: GuidanceOption = None,
    dtype: DtypeOption = DEFAULT_ENGINE.dtype,
    max_new_tokens: MaxNewTokensOption = 200,
    qa: Annotated[
        Path | None, typer.Option(help="An origin-qa run of the same model (Table 4, Fig. 9).")
    ] = None,
    vqa: Annotated[Path | None, typer.Option(help="An origin-vqa run of the same model.")] = None,
    human: Annotated[
        Path | None, typer.Option(help="Human ratings CSV: dish_id, language, rating in [0, 1] (Table 3).")
    ] = None,
    base_url: BaseUrlOption = None,
    batch_size: BatchSizeOption = 8,
) -> None:
    """BORSCH §5: describe -> translate -> generate images -> DINOv2 scores -> correlations."""
    from culturebench.datasets.borsch.pipeline import PipelineSpec, run_pipeline

    if not source.local and not source.revision:
        raise UsageError("give --local RELEASE or --revision REV")
    _check_stage_options(t2i_backend, size, dtype, human)  # before hours of stages

    def takes(which: str, flag: str) -> bool:
        return flag in shared_flags(which)

    def text_engine(name: str, which: str):
        # one --base-url serves the stages on an endpoint backend; the others take none
        url = base_url if takes(which, "base_url") else None
        choice = EngineChoice(
            backend=which, model=name, max_new_tokens=max_new_tokens, batch_size=batch_size, base_url=url
        )
        return choice.make

    t2i_engine = EngineChoice(
        backend=t2i_backend, model=t2i, size=size, steps=steps, guidance=guidance,
        dtype=dtype if takes(t2i_backend, "dtype") else DEFAULT_ENGINE.dtype,
        batch_size=batch_size, base_url=base_url if takes(t2i_backend, "base_url") else None,
        concurrency=option_default(t2i_backend, "concurrency", DEFAULT_ENGINE.concurrency),
    )  # fmt: skip
    spec = PipelineSpec(
        out=out,
        **source.as_kwargs(),
        config=config,
        langs=lang,
        limit=limit,
        describer=text_engine(model, backend),
        translator=None
        if (translator or "").lower() == "none"
        else text_engine(translator or model, translator_backend),
        t2i=t2i_engine.make,
        images_per_dish=images_per_dish,
        dinov2=dinov2,
        qa=str(qa) if qa else None,
        vqa=str(vqa) if vqa else None,
        human=str(human) if human else None,
        batch_size=batch_size,
    )
    with progress_bar() as bar:
        job = bar.add_task("borsch §5", total=None)
        record = run_pipeline(
            spec,
            progress=lambda stage, done, total: bar.update(
                job, description=stage, completed=done, total=total
            ),
            log=console.print,
        )
    for entry in record["stages"]:
        changed = "  (rerun: inputs or settings changed)" if entry["rerun_because_changed"] else ""
        console.print(
            f"{entry['stage']:16s} {entry['seconds']:8.1f} s  {entry['samples']} items "
            f"({entry['new_samples']} new){changed}"
        )
    console.print(f"pipeline record: {out / 'pipeline.json'}; report: culturebench eval report {out}/*/")


def _check_stage_options(t2i_backend: str, size: str, dtype: str, human: Path | None) -> None:
    """The options of later stages, checked before the first stage runs."""
    from culturebench.errors import UsageError
    from culturebench.eval.backends import backend_kind, check_model_args, choices_text, require_backend
    from culturebench.eval.backends.image_base import parse_size

    if backend_kind(t2i_backend) != "image":
        raise UsageError(f"--t2i-backend {t2i_backend!r}: choose from {choices_text('image')}")
    require_backend(t2i_backend)
    parse_size(size)
    if "dtype" in shared_flags(t2i_backend):  # checked against the backend's declared choices
        check_model_args(t2i_backend, [("dtype", dtype)])
    if human is not None and not Path(human).is_file():
        raise UsageError(f"--human {human}: no such file")


def option_default(backend: str, name: str, fallback: Any) -> Any:
    """The default a backend declares for one of its options (``fallback`` when it has none)."""
    from culturebench.eval.backends import backend_options

    found = [o.default for o in backend_options(backend) if o.name == name]
    return found[0] if found and found[0] is not None else fallback


# --- the §4.2-4.3 / App. C analyses of a corpus count (`culturebench corpus ...`) ---


def _write(out: Path | None, data: dict) -> None:
    text = json_text(data, indent=2).rstrip("\n")
    if out is None:
        console.print_json(text)
        return
    from culturebench.atomic import write_text_atomic

    write_text_atomic(out, text + "\n")
    console.print(f"wrote {out}")


def code_mixing_cmd(
    count: Annotated[Path, typer.Argument(help="Folder of a `corpus count` (parallel names).")],
    qa: Annotated[Path | None, typer.Option(help="An origin-qa run (Jaccard per dish).")] = None,
    vqa: Annotated[Path | None, typer.Option(help="A dish-name-vqa run (accuracy per dish).")] = None,
    bins: Annotated[int, typer.Option(min=2, max=1000, help="Bins of the occurrence difference.")] = 9,
    out: Annotated[Path | None, typer.Option(help="Write JSON (and a Fig. 5 plot beside it).")] = None,
    overwrite: FileOverwriteOption = False,
) -> None:
    """§4.2 / Fig. 5: code-mixing share, and scores per bin of the name-occurrence difference."""
    from culturebench.datasets.borsch.corpus_analyses import code_mixing

    claim_file(out, overwrite, [count, qa, vqa])
    result = code_mixing(count, qa=qa, vqa=vqa, bins=bins)
    _write(out, result)
    if out is not None:
        keys = ("qa_jaccard_by_difference", "vqa_accuracy_by_difference")
        _plot_bins(
            result, keys, out.with_suffix(".png"), "Fig. 5: by own minus other-language name occurrences"
        )


def cooccurrence_cmd(
    count: Annotated[Path, typer.Argument(help="Folder of a `corpus count`.")],
    qa: Annotated[Path, typer.Option(help="An origin-qa run of the same language.")],
    bins: Annotated[int, typer.Option(min=2, max=1000, help="Log-spaced bins.")] = 10,
    out: Annotated[Path | None, typer.Option(help="Write JSON (and a Fig. 6 plot beside it).")] = None,
    overwrite: FileOverwriteOption = False,
) -> None:
    """§4.3 / Fig. 6: QA Jaccard per log-spaced bin of correct co-occurrence count and ratio."""
    from culturebench.datasets.borsch.corpus_analyses import cooccurrence_bins

    claim_file(out, overwrite, [count, qa])
    result = cooccurrence_bins(count, qa, bins=bins)
    _write(out, result)
    if out is not None:
        keys = ("qa_jaccard_by_correct_count", "qa_jaccard_by_correct_ratio")
        _plot_bins(result, keys, out.with_suffix(".png"), "Fig. 6: QA Jaccard by correct co-occurrence")


def _plot_bins(result: dict, keys: tuple[str, ...], path: Path, title: str) -> None:
    from culturebench.eval.plots import plot_grouped_bars

    for key in keys:
        rows = result.get(key)
        if rows:
            labels = [f"{r['from']:g}..{r['to']:g}\n(n={r['n_dishes']})" for r in rows]
            target = path.with_name(f"{path.stem}_{key}.png")
            plot_grouped_bars(
                {key: [r["score"] for r in rows]}, labels, target, title=title, ylabel="mean score"
            )
            console.print(f"wrote {target}")


def sample_cmd(
    count: Annotated[Path, typer.Argument(help="Folder of a `corpus count`.")],
    out: Annotated[Path, typer.Option(help="CSV for annotators (category column empty).")],
    n: Annotated[int, typer.Option(min=1, help="Sentences (paper: 400 per language).")] = 400,
    overwrite: FileOverwriteOption = False,
) -> None:
    """Fig. 7: N incorrect co-occurrence sentences (at most --per-dish of the count per dish)."""
    from culturebench.datasets.borsch.corpus_analyses import sample_incorrect

    claim_file(out, overwrite, [count])  # an annotated sample is hours of human work
    console.print(f"wrote {sample_incorrect(count, n, out)}")


def annotations_cmd(
    files: Annotated[list[Path], typer.Argument(help="Annotated sample CSVs (category filled in).")],
    out: Annotated[Path | None, typer.Option(help="Write JSON.")] = None,
    overwrite: FileOverwriteOption = False,
) -> None:
    """Fig. 7: shares of scraping errors, irrelevant location, polysemy, inaccurate origin, misc."""
    from culturebench.datasets.borsch.corpus_analyses import tabulate_annotations

    claim_file(out, overwrite, files)
    seen: set[Path] = set()
    for path in files:
        if path.resolve() in seen:
            raise UsageError(f"{path}: given twice (it would be counted twice)")
        seen.add(path.resolve())
    _write(out, tabulate_annotations(files))


def captions_cmd(
    count: Annotated[Path, typer.Argument(help="Folder of a `corpus count` over caption metadata.")],
    out: Annotated[Path | None, typer.Option(help="Write JSON.")] = None,
    overwrite: FileOverwriteOption = False,
) -> None:
    """App. C: share of dishes with any caption mention, per name language."""
    from culturebench.datasets.borsch.corpus_analyses import caption_share

    claim_file(out, overwrite, [count])
    _write(out, caption_share(count))
