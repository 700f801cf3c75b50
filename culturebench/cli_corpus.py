"""``culturebench corpus``: dish-country co-occurrence and code mixing in pretraining corpora."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from culturebench.cli_support import (
    EXIT_BAD_INPUT,
    FileOverwriteOption,
    claim_file,
    console,
    err_console,
    or_exit,
    progress_bar,
)
from culturebench.jsonsafe import json_text

corpus_app = typer.Typer(
    help="Count a dataset's names in pretraining corpora (locally or on a Dask cluster) and analyse them.",
    no_args_is_help=True,
)


@corpus_app.command("count")
def count_cmd(
    dataset: Annotated[str, typer.Argument(help="Dataset name (its dataset.yaml declares code.corpus).")],
    corpus: Annotated[
        str,
        typer.Option(
            help="Shards: a file, folder or glob; any fsspec URL (hf://, s3://); or hub:REPO[@REV][:GLOB]."
        ),
    ],
    lang: Annotated[
        str, typer.Option(help="Language of the corpus (ru, uk, en): the country names to look for.")
    ],
    out: Annotated[
        Path, typer.Option(help="Output folder (tables, parts/, count.json); reruns reuse parts.")
    ],
    column: Annotated[str, typer.Option(help="Text column (LAION captions: e.g. TEXT or caption).")] = "text",
    config: Annotated[str | None, typer.Option(help="Dataset config (BORSCH: parallel, ru or uk).")] = None,
    local: Annotated[Path | None, typer.Option(help="A local release folder instead of the Hub.")] = None,
    revision: Annotated[str | None, typer.Option(help="Dataset revision on the Hub.")] = None,
    repo: Annotated[str | None, typer.Option(help="Dataset repo id.")] = None,
    scheduler: Annotated[
        str | None,
        typer.Option(help="Dask scheduler address, HOST:PORT or tcp://HOST:PORT; default: this machine."),
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="Local processes (without --scheduler).")] = 1,
    seed: Annotated[
        int, typer.Option(min=0, max=2**32 - 1, help="Seed of the incorrect co-occurrence sample.")
    ] = 0,
    per_dish: Annotated[
        int, typer.Option(min=1, help="Sampled incorrect co-occurrences per dish at most.")
    ] = 3,
) -> None:
    """Mentions per dish name, dish-country co-occurring documents, correct co-occurrence count
    and ratio, and a seeded sample of incorrect co-occurrences, as Parquet tables."""
    from culturebench.eval.corpus.job import corpus_count

    bar, update = _progress(f"{dataset} in {corpus}")
    with bar:
        record = or_exit(
            lambda: corpus_count(
                dataset, corpus, out, lang=lang, column=column, config=config,
                local=str(local) if local else None, revision=revision, repo=repo, scheduler=scheduler,
                workers=workers, seed=seed, per_dish=per_dish,
                progress=update,
            )
        )  # fmt: skip
    chars = record["characters"] / 1e6
    console.print(
        f"{len(record['shards'])} shards, {record['documents']} documents, {chars:.1f} M characters in "
        f"{record['seconds']:.1f} s ({chars / max(record['seconds'], 1e-9):.1f} M/s); tables in {out}"
    )


def _progress(title: str):
    """:func:`culturebench.cli_support.progress_bar` (count, rate, elapsed time and ETA on a
    terminal; quiet elsewhere) and the update function of a corpus job. The engine reports
    bytes of the shards as stored (within a shard too, on one process), shown in kB, MB or GB
    by the corpus size, so the count and the rate read as sizes (MB, MB/s)."""
    from rich.progress import Progress

    bar = progress_bar()
    # a bar shows its title while the corpus is listed; log lines start with the unit known
    job = [bar.add_task(title, total=None)] if isinstance(bar, Progress) else []
    scale: list[float] = []

    def update(done: int, total: int) -> None:
        if not scale:
            unit, factor = next(((u, f) for u, f in _UNITS if total >= 10 * f), ("bytes", 1.0))
            scale.append(factor)
            if job:
                bar.update(job[0], description=f"{title} ({unit})")
            else:
                job.append(bar.add_task(f"{title} ({unit})", total=None))
        bar.update(job[0], completed=done / scale[0], total=total / scale[0])

    return bar, update


_UNITS = (("GB", 1e9), ("MB", 1e6), ("kB", 1e3))


def _write(out: Path | None, data: dict) -> None:
    text = json_text(data, indent=2).rstrip("\n")
    if out is None:
        console.print_json(text)
        return
    from culturebench.atomic import write_text_atomic

    write_text_atomic(out, text + "\n")
    console.print(f"wrote {out}")


@corpus_app.command("code-mixing")
def code_mixing_cmd(
    count: Annotated[Path, typer.Argument(help="Folder of a `corpus count` (parallel names).")],
    qa: Annotated[Path | None, typer.Option(help="An origin-qa run (Jaccard per dish).")] = None,
    vqa: Annotated[Path | None, typer.Option(help="A dish-name-vqa run (accuracy per dish).")] = None,
    bins: Annotated[int, typer.Option(min=2, max=1000, help="Bins of the occurrence difference.")] = 9,
    out: Annotated[Path | None, typer.Option(help="Write JSON (and a Fig. 5 plot beside it).")] = None,
    overwrite: FileOverwriteOption = False,
) -> None:
    """§4.2 / Fig. 5: code-mixing share, and scores per bin of the name-occurrence difference."""
    from culturebench.eval.corpus.analyses import code_mixing

    claim_file(out, overwrite, [count, qa, vqa])
    result = or_exit(lambda: code_mixing(count, qa=qa, vqa=vqa, bins=bins))
    _write(out, result)
    if out is not None:
        keys = ("qa_jaccard_by_difference", "vqa_accuracy_by_difference")
        _plot_bins(
            result, keys, out.with_suffix(".png"), "Fig. 5: by own minus other-language name occurrences"
        )


@corpus_app.command("cooccurrence")
def cooccurrence_cmd(
    count: Annotated[Path, typer.Argument(help="Folder of a `corpus count`.")],
    qa: Annotated[Path, typer.Option(help="An origin-qa run of the same language.")],
    bins: Annotated[int, typer.Option(min=2, max=1000, help="Log-spaced bins.")] = 10,
    out: Annotated[Path | None, typer.Option(help="Write JSON (and a Fig. 6 plot beside it).")] = None,
    overwrite: FileOverwriteOption = False,
) -> None:
    """§4.3 / Fig. 6: QA Jaccard per log-spaced bin of correct co-occurrence count and ratio."""
    from culturebench.eval.corpus.analyses import cooccurrence_bins

    claim_file(out, overwrite, [count, qa])
    result = or_exit(lambda: cooccurrence_bins(count, qa, bins=bins))
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


@corpus_app.command("sample")
def sample_cmd(
    count: Annotated[Path, typer.Argument(help="Folder of a `corpus count`.")],
    out: Annotated[Path, typer.Option(help="CSV for annotators (category column empty).")],
    n: Annotated[int, typer.Option(min=1, help="Sentences (paper: 400 per language).")] = 400,
    overwrite: FileOverwriteOption = False,
) -> None:
    """Fig. 7: N incorrect co-occurrence sentences (at most --per-dish of the count per dish)."""
    from culturebench.eval.corpus.analyses import sample_incorrect

    claim_file(out, overwrite, [count])  # an annotated sample is hours of human work
    console.print(f"wrote {or_exit(lambda: sample_incorrect(count, n, out))}")


@corpus_app.command("annotations")
def annotations_cmd(
    files: Annotated[list[Path], typer.Argument(help="Annotated sample CSVs (category filled in).")],
    out: Annotated[Path | None, typer.Option(help="Write JSON.")] = None,
    overwrite: FileOverwriteOption = False,
) -> None:
    """Fig. 7: shares of scraping errors, irrelevant location, polysemy, inaccurate origin, misc."""
    from culturebench.eval.corpus.analyses import tabulate_annotations

    claim_file(out, overwrite, files)
    seen: set[Path] = set()
    for path in files:
        if path.resolve() in seen:
            err_console.print(
                f"[red]error:[/] {escape(str(path))}: given twice (it would be counted twice)", soft_wrap=True
            )
            raise typer.Exit(EXIT_BAD_INPUT)
        seen.add(path.resolve())
    _write(out, or_exit(lambda: tabulate_annotations(files)))


@corpus_app.command("captions")
def captions_cmd(
    count: Annotated[Path, typer.Argument(help="Folder of a `corpus count` over caption metadata.")],
    out: Annotated[Path | None, typer.Option(help="Write JSON.")] = None,
    overwrite: FileOverwriteOption = False,
) -> None:
    """App. C: share of dishes with any caption mention, per name language."""
    from culturebench.eval.corpus.analyses import caption_share

    claim_file(out, overwrite, [count])
    _write(out, or_exit(lambda: caption_share(count)))


@corpus_app.command("contamination")
def contamination_cmd(
    dataset: Annotated[str, typer.Argument(help="Dataset name.")],
    references: Annotated[
        str,
        typer.Option(
            help="Reference pHash shards (Parquet: phash, source): a file, folder, glob, URL or hub:."
        ),
    ],
    out: Annotated[Path, typer.Option(help="Output folder (contamination.parquet, .json, parts/).")],
    threshold: Annotated[int, typer.Option(min=0, max=32, help="Hamming distance at most.")] = 10,
    local: Annotated[Path | None, typer.Option(help="A local release folder.")] = None,
    revision: Annotated[str | None, typer.Option(help="Dataset revision on the Hub.")] = None,
    repo: Annotated[str | None, typer.Option(help="Dataset repo id.")] = None,
    scheduler: Annotated[
        str | None,
        typer.Option(help="Dask scheduler address, HOST:PORT or tcp://HOST:PORT; default: this machine."),
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="Local processes (without --scheduler).")] = 1,
) -> None:
    """A release's image pHashes against a reference collection of any size, one task per shard."""
    from culturebench.eval.corpus.contamination import corpus_contamination

    bar, update = _progress(f"{dataset} images vs {references}")
    with bar:
        record = or_exit(
            lambda: corpus_contamination(
                dataset, references, out, threshold=threshold, local=str(local) if local else None,
                revision=revision, repo=repo, scheduler=scheduler, workers=workers,
                progress=update,
            )
        )  # fmt: skip
    console.print(
        f"{record['images_matched']} of {record['release_images']} release images match "
        f"{record['matches']} reference hashes within {threshold} bits ({len(record['shards'])} shards, "
        f"{record['seconds']:.1f} s); {out / 'contamination.parquet'}"
    )
