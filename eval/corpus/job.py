"""``culturebench corpus count``: a dataset's names counted in a corpus, with provenance.

The dataset says which names to look for (its ``corpus`` code part: ``corpus_terms(rows,
config)``); the corpus is listed into shards; the engine counts each shard; the parts are
merged once each into Parquet tables; ``count.json`` (written last) records the dataset
revision, every shard with its size and fingerprint, the matcher version, the engine and the
totals.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError, UsageError
from culturebench.jsonsafe import json_text
from culturebench.outputs import OutputKind, resumable_output

COUNT_JSON = "count.json"


def corpus_count(
    dataset: str,
    corpus: str,
    out: Path,
    *,
    lang: str,
    column: str = "text",
    config: str | None = None,
    local: str | None = None,
    revision: str | None = None,
    repo: str | None = None,
    scheduler: str | None = None,
    workers: int = 1,
    seed: int = 0,
    per_dish: int = 3,
    progress: Callable[[int, int], None] | None = None,
    full_hash: bool = False,
) -> dict[str, Any]:
    """Run the count job and return the ``count.json`` record. ``full_hash``: fingerprint each
    local shard by the sha256 of all its bytes (one more full read) instead of its size, mtime
    and sampled blocks."""
    from culturebench import registry
    from culturebench.eval.corpus.engine import check_scheduler
    from culturebench.eval.country_extractor import LANGUAGES
    from culturebench.eval.run_folder import check_out_dir

    hooks = registry.get(dataset).module("corpus")
    if hooks is None:
        raise UsageError(f"dataset {dataset!r} declares no corpus terms (dataset.yaml code.corpus)")
    if lang not in LANGUAGES:  # the languages the country names are known in
        choices = f"{', '.join(LANGUAGES[:-1])} or {LANGUAGES[-1]}"
        raise UsageError(f"--lang {lang!r}: the corpus language, {choices} (country names in it)")
    if scheduler is not None:
        scheduler = check_scheduler(scheduler)  # before any work: a bad address is a usage error
    config = config or hooks.DEFAULT_CONFIG
    check_out_dir(out)
    with resumable_output(out, COUNT_OUTPUT):  # a rerun reuses the parts of finished shards
        return _count(dataset, hooks, corpus, out, lang, column, config, local, revision, repo, scheduler,
                      workers, seed, per_dish, progress, full_hash)  # fmt: skip


COUNT_OUTPUT = OutputKind("corpus-count", ("parts",))


def _count(
    dataset: str,
    hooks: Any,
    corpus: str,
    out: Path,
    lang: str,
    column: str,
    config: str,
    local: str | None,
    revision: str | None,
    repo: str | None,
    scheduler: str | None,
    workers: int,
    seed: int,
    per_dish: int,
    progress: Callable[[int, int], None] | None,
    full_hash: bool = False,
) -> dict[str, Any]:
    from culturebench.atomic import write_text_atomic
    from culturebench.eval.corpus.count import CountSpec, merge_parts, run_shards, write_tables
    from culturebench.eval.corpus.matcher import MATCHER_VERSION
    from culturebench.eval.corpus.shards import list_shards
    from culturebench.eval.dataset_ref import load_rows, resolve_dataset
    from culturebench.eval.run_folder import git_sha
    from culturebench.safe_http import redact

    ref = resolve_dataset(dataset, revision=revision, local=local, repo=repo)
    rows = load_rows(ref, config, "test", None)
    dishes, origins = hooks.corpus_terms(rows, config)
    if not dishes:
        raise CultureBenchError(f"{dataset}/{config}: no names to look for")
    shards = list_shards(corpus, full_hash=full_hash)
    spec = CountSpec(
        corpus_lang=lang, column=column, dishes=dishes, origins=origins, seed=seed, per_dish=per_dish
    )
    start = time.perf_counter()
    run_shards(shards, spec, out / "parts", scheduler=scheduler, workers=workers, progress=progress)
    seconds = time.perf_counter() - start
    merged = merge_parts(shards, spec, out / "parts")
    if not merged["documents"]:  # an empty corpus is not a count of zero mentions
        raise CultureBenchError(f"--corpus {redact(corpus)}: no documents in {len(shards)} shard(s)")
    tables = write_tables(merged, spec, out)
    record = {
        "dataset": ref.to_pin(),
        "config": config,
        "corpus": redact(corpus),
        "corpus_lang": lang,
        "column": column,
        "shards": [s.to_dict() for s in shards],
        "matcher_version": MATCHER_VERSION,
        "spec_sha256": spec.digest(),
        "sample": {"seed": seed, "per_dish": per_dish},
        "engine": {"scheduler": redact(scheduler) if scheduler else "local", "workers": workers},
        "documents": merged["documents"],
        "characters": merged["characters"],
        "seconds": round(seconds, 3),
        "tables": [p.name for p in tables],
        "culturebench_git": git_sha(),
    }
    write_text_atomic(out / COUNT_JSON, json_text(record, indent=2))
    return record


def read_count(folder: Path) -> dict[str, Any]:
    """``count.json`` of a finished count; CultureBenchError when missing or corrupt."""
    from culturebench.eval.country_extractor import LANGUAGES

    path = Path(folder) / COUNT_JSON
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise CultureBenchError(
            f"{folder} is not a finished corpus count (no readable {COUNT_JSON})"
        ) from None
    if not isinstance(record, dict) or record.get("corpus_lang") not in LANGUAGES:
        raise CultureBenchError(f"{path}: not a culturebench corpus count (no corpus_lang)")
    return record
