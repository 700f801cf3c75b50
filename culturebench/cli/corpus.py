"""``culturebench corpus``: a dataset's names and images in pretraining corpora.

The dataset-neutral commands live here: ``count`` (the names a dataset's ``corpus`` code part
lists, counted by :mod:`culturebench.eval.corpus`) and ``contamination``. A dataset's own
analyses of a count are commands its ``cli`` module adds to :data:`corpus_app` with an optional
``register_corpus(corpus_app)`` (called by :mod:`culturebench.cli`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturebench.cli.options import DEFAULT_SOURCE, DatasetSource, with_dataset_source
from culturebench.cli.output import console
from culturebench.cli.progress import progress_bar

corpus_app = typer.Typer(
    help="Count a dataset's names in pretraining corpora (locally or on a Dask cluster) and analyse them.",
    no_args_is_help=True,
)


@corpus_app.command("count")
@with_dataset_source
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
    source: DatasetSource = DEFAULT_SOURCE,
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
    full_hash: Annotated[
        bool,
        typer.Option(
            help="Fingerprint local shards by the sha256 of all their bytes (one more read) instead of "
            "size, mtime and sampled blocks."
        ),
    ] = False,
) -> None:
    """Mentions per dish name, dish-country co-occurring documents, correct co-occurrence count
    and ratio, and a seeded sample of incorrect co-occurrences, as Parquet tables."""
    from culturebench.eval.corpus.job import corpus_count

    bar, update = _progress(f"{dataset} in {corpus}")
    with bar:
        record = corpus_count(
            dataset, corpus, out, lang=lang, column=column, config=config,
            **source.as_kwargs(), scheduler=scheduler,
            workers=workers, seed=seed, per_dish=per_dish,
            progress=update, full_hash=full_hash,
        )  # fmt: skip
    chars = record["characters"] / 1e6
    console.print(
        f"{len(record['shards'])} shards, {record['documents']} documents, {chars:.1f} M characters in "
        f"{record['seconds']:.1f} s ({chars / max(record['seconds'], 1e-9):.1f} M/s); tables in {out}"
    )


def _progress(title: str):
    """:func:`culturebench.cli.progress.progress_bar` (count, rate, elapsed time and ETA on a
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


@corpus_app.command("contamination")
@with_dataset_source
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
    source: DatasetSource = DEFAULT_SOURCE,
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
        record = corpus_contamination(
            dataset, references, out, threshold=threshold, **source.as_kwargs(), scheduler=scheduler,
            workers=workers, progress=update,
        )  # fmt: skip
    console.print(
        f"{record['images_matched']} of {record['release_images']} release images match "
        f"{record['matches']} reference hashes within {threshold} bits ({len(record['shards'])} shards, "
        f"{record['seconds']:.1f} s); {out / 'contamination.parquet'}"
    )
