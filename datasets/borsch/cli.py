"""BORSCH commands: ``culturebench eval borsch-description`` (§5 as one resumable pipeline)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturebench.cli_support import (
    BatchSizeOption,
    GuidanceOption,
    MaxNewTokensOption,
    console,
    err_console,
    make_engine,
    make_image_engine,
    or_exit,
    progress_bar,
)
from culturebench.sparql import MAX_BYTES, MAX_PAGES, MAX_ROWS


def register(eval_app: typer.Typer) -> None:
    """Add this dataset's commands to ``culturebench eval``."""
    eval_app.command("borsch-description")(description_cmd)


def maintain(group: typer.Typer) -> None:
    """Add the maintainer commands: ``culturebench borsch wikidata`` and ``wikidata-diff``."""
    group.command("wikidata")(wikidata_cmd)
    group.command("wikidata-diff")(wikidata_diff_cmd)


def wikidata_cmd(
    lang: Annotated[str, typer.Option(help="Label language: ru, uk or en.")],
    out: Annotated[Path, typer.Option(help="Output folder (candidates.parquet, wikidata.json).")],
    endpoint: Annotated[str, typer.Option(help="SPARQL endpoint URL.")] = "https://query.wikidata.org/sparql",
    cache: Annotated[
        Path | None, typer.Option(help="Cache folder of answers (default: the culturebench cache).")
    ] = None,
    no_cache: Annotated[bool, typer.Option(help="Neither read nor write the cache.")] = False,
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
    from culturebench.cache import cache_root
    from culturebench.datasets.borsch.wikidata import fetch_candidates

    cache_dir = None if no_cache else (cache or cache_root() / "sparql")
    with progress_bar() as bar:
        job = bar.add_task(f"Wikidata dishes ({lang})", total=None)
        record = or_exit(
            lambda: fetch_candidates(
                endpoint, lang, out, cache_dir=cache_dir, refresh=refresh, page_size=page_size,
                timeout=timeout, retries=retries, contact=contact, overwrite=overwrite,
                progress=lambda n: bar.update(job, completed=n), allow=tuple(allow or ()),
                max_bytes=max_bytes, max_pages=max_pages, max_rows=max_rows,
            )
        )  # fmt: skip
    console.print(
        f"{record['rows']} candidates ({record['with_origin']} with an ISO origin) in {record['pages']} "
        f"page(s), {record['pages_from_cache']} from the cache; query sha256 {record['query_sha256'][:12]}; "
        f"wrote {out}"
    )


def wikidata_diff_cmd(
    candidates: Annotated[Path, typer.Argument(help="A `culturebench borsch wikidata` output folder.")],
    out: Annotated[Path, typer.Option(help="Report folder (wikidata_diff.json, wikidata_diff.md).")],
    local: Annotated[Path | None, typer.Option(help="A local release folder instead of the Hub.")] = None,
    revision: Annotated[str | None, typer.Option(help="Dataset revision on the Hub.")] = None,
    repo: Annotated[str | None, typer.Option(help="Dataset repo id (default culturebench/borsch).")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing --out folder.")] = False,
) -> None:
    """What a refresh from Wikidata would change in a release (new dishes, changed origins,
    dishes no longer returned), as a report to review. It changes nothing itself."""
    from culturebench.datasets.borsch.wikidata import refresh_report

    counts = or_exit(
        lambda: refresh_report(
            candidates, out, local=str(local) if local else None, revision=revision, repo=repo,
            overwrite=overwrite,
        )
    )  # fmt: skip
    console.print(
        f"same {counts['same']}, origins differ {counts['origins_differ']}, new {counts['new']}, "
        f"no longer returned {counts['not_returned']}, ambiguous {counts['ambiguous']}; "
        f"review {out / 'wikidata_diff.md'}"
    )


def description_cmd(
    model: Annotated[str, typer.Option(help="The model that describes the dishes (Hub id or folder).")],
    t2i: Annotated[str, typer.Option(help="Text-to-image model (paper: black-forest-labs/FLUX.1-dev).")],
    dinov2: Annotated[str, typer.Option(help="DINOv2 model (paper: facebook/dinov2-giant).")],
    out: Annotated[Path, typer.Option(help="Pipeline folder (one sub-folder per stage; reruns resume).")],
    local: Annotated[Path | None, typer.Option(help="A local release folder (with embedded images).")] = None,
    revision: Annotated[str | None, typer.Option(help="Dataset revision on the Hub.")] = None,
    repo: Annotated[str | None, typer.Option(help="Dataset repo id (default culturebench/borsch).")] = None,
    config: Annotated[str, typer.Option(help="parallel (paper), ru or uk.")] = "parallel",
    lang: Annotated[list[str] | None, typer.Option(help="Language(s) to prompt in (default: all).")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N dishes.")] = None,
    backend: Annotated[
        str, typer.Option(help="Describer backend: transformers, vllm or openai.")
    ] = "transformers",
    translator: Annotated[
        str | None,
        typer.Option(
            help="Model that translates descriptions to English ('none': the describer writes English)."
        ),
    ] = None,
    translator_backend: Annotated[str, typer.Option(help="transformers, vllm or openai.")] = "transformers",
    t2i_backend: Annotated[str, typer.Option(help="diffusers or openai-images.")] = "diffusers",
    images_per_dish: Annotated[int, typer.Option(min=1, help="Images per description (seeds 0..N-1).")] = 1,
    size: Annotated[str, typer.Option(help="Image size WIDTHxHEIGHT.")] = "512x512",
    steps: Annotated[
        int | None, typer.Option(min=1, help="Denoising steps (default: the pipeline's).")
    ] = None,
    guidance: GuidanceOption = None,
    dtype: Annotated[str, typer.Option(help="diffusers dtype: float32, float16, bfloat16.")] = "float32",
    max_new_tokens: MaxNewTokensOption = 200,
    qa: Annotated[
        Path | None, typer.Option(help="An origin-qa run of the same model (Table 4, Fig. 9).")
    ] = None,
    vqa: Annotated[Path | None, typer.Option(help="An origin-vqa run of the same model.")] = None,
    human: Annotated[
        Path | None, typer.Option(help="Human ratings CSV: dish_id, language, rating in [0, 1] (Table 3).")
    ] = None,
    base_url: Annotated[str | None, typer.Option(help="openai backends: endpoint base URL.")] = None,
    batch_size: BatchSizeOption = 8,
) -> None:
    """BORSCH §5: describe -> translate -> generate images -> DINOv2 scores -> correlations."""
    from culturebench.datasets.borsch.pipeline import PipelineSpec, run_pipeline

    if not local and not revision:
        err_console.print("[red]error:[/] give --local RELEASE or --revision REV")
        raise typer.Exit(2)
    or_exit(lambda: _check_stage_options(t2i_backend, size, dtype, human))  # before hours of stages

    def text_engine(name: str, which: str):
        return lambda: make_engine(
            which, name, model_revision=None, max_new_tokens=max_new_tokens, seed=0, temperature=0.0,
            batch_size=batch_size, base_url=base_url, concurrency=4,
        )  # fmt: skip

    spec = PipelineSpec(
        out=out,
        local=str(local) if local else None,
        revision=revision,
        repo=repo,
        config=config,
        langs=lang,
        limit=limit,
        describer=text_engine(model, backend),
        translator=None
        if (translator or "").lower() == "none"
        else text_engine(translator or model, translator_backend),
        t2i=lambda: make_image_engine(
            t2i_backend,
            t2i,
            model_revision=None,
            seed=0,
            size=size,
            steps=steps,
            guidance=guidance,
            dtype=dtype,
            batch_size=batch_size,
            base_url=base_url,
            concurrency=2,
            quality=None,
        ),
        images_per_dish=images_per_dish,
        dinov2=dinov2,
        qa=str(qa) if qa else None,
        vqa=str(vqa) if vqa else None,
        human=str(human) if human else None,
        batch_size=batch_size,
    )
    with progress_bar() as bar:
        job = bar.add_task("borsch §5", total=None)
        record = or_exit(
            lambda: run_pipeline(
                spec,
                progress=lambda stage, done, total: bar.update(
                    job, description=stage, completed=done, total=total
                ),
                log=console.print,
            )
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
    from culturebench.eval.backends import IMAGE_BACKENDS, require_backend
    from culturebench.eval.backends.diffusers_backend import DTYPES
    from culturebench.eval.backends.image_base import parse_size

    if t2i_backend not in IMAGE_BACKENDS:
        raise UsageError(f"--t2i-backend {t2i_backend!r}: choose from {', '.join(IMAGE_BACKENDS)}")
    require_backend(t2i_backend)
    parse_size(size)
    if t2i_backend == "diffusers" and dtype not in DTYPES:
        raise UsageError(f"--dtype {dtype!r}: choose from {', '.join(DTYPES)}")
    if human is not None and not Path(human).is_file():
        raise UsageError(f"--human {human}: no such file")
