"""Benchmark: ``corpus count`` throughput against a raw read of the same shards, scaling from 1
to 2 workers (local processes and a local Dask cluster on 127.0.0.1), and a projection for mC4.

It generates its own corpus: Ukrainian-like documents (about 2 KB each) built from a seeded
vocabulary of real Ukrainian words plus random Cyrillic words, with the BORSCH sample's dish
names and country names planted in 5% of the documents, in gzip JSON Lines shards (mC4's
format). Ratios are against the raw read (decompress + JSON parse of the text field) measured
in the same run.

    python benchmarks/bench_corpus.py [--shards 8] [--docs 4000] [--release dist/borsch/1.0.0]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import tempfile
import time
from pathlib import Path

WORDS = [
    "страва",
    "рецепт",
    "смачний",
    "сьогодні",
    "готувати",
    "кухня",
    "хліб",
    "вода",
    "сіль",
    "цукор",
    "борошно",
    "молоко",
    "масло",
    "м'ясо",
    "картопля",
    "цибуля",
    "часник",
    "морква",
    "капуста",
    "буряк",
    "яйце",
    "сир",
    "сметана",
    "олія",
    "перець",
    "зелень",
    "година",
    "хвилина",
    "потрібно",
    "додати",
    "варити",
    "смажити",
    "запікати",
    "подавати",
    "гарячий",
    "холодний",
    "свято",
    "родина",
    "бабуся",
    "традиція",
    "місто",
    "село",
    "ринок",
    "ціна",
    "магазин",
    "новини",
    "погода",
    "спорт",
    "політика",
    "економіка",
    "школа",
    "робота",
    "дім",
]


def make_corpus(folder: Path, shards: int, docs: int, names: list[str], countries: list[str]) -> int:
    rng = random.Random(0)
    vocab = WORDS + [
        "".join(rng.choice("абвгдежзийклмнопрстуфхцчшщьюяєії") for _ in range(rng.randint(3, 10)))
        for _ in range(3000)
    ]
    total = 0
    folder.mkdir(parents=True, exist_ok=True)
    for s in range(shards):
        with gzip.open(folder / f"uk-{s:03d}.json.gz", "wt", encoding="utf-8") as handle:
            for _ in range(docs):
                words = [rng.choice(vocab) for _ in range(260)]
                if rng.random() < 0.05:
                    words[rng.randrange(260)] = rng.choice(names).lower()
                    words[rng.randrange(260)] = rng.choice(countries)
                text = ". ".join(" ".join(words[i : i + 13]) for i in range(0, 260, 13)) + "."
                total += len(text.encode("utf-8"))
                handle.write(
                    json.dumps({"text": text, "url": "https://example.org"}, ensure_ascii=False) + "\n"
                )
    return total


def raw_read(corpus: Path) -> float:
    from culturebench.eval.corpus.shards import iter_texts, list_shards

    start = time.perf_counter()
    size = sum(
        len(t.encode("utf-8"))
        for s in list_shards(str(corpus))
        for batch in iter_texts(s, "text")
        for t in batch
    )
    return size / (time.perf_counter() - start) / 1e6


def count_rate(corpus: Path, release: str, out: Path, size: int, **engine) -> tuple[float, float]:
    """MB/s of text (``size`` UTF-8 bytes, as the raw read counts them) through corpus count."""
    from culturebench.eval.corpus.job import corpus_count

    record = corpus_count("borsch", str(corpus), out, lang="uk", local=release, **engine)
    return size / record["seconds"] / 1e6, record["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--docs", type=int, default=4000)
    parser.add_argument("--release", default=None, help="a BORSCH release folder (default: build the sample)")
    parser.add_argument(
        "--mc4-tb", type=float, default=1.0, help="assumed text size of the corpus to project"
    )
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cb-bench-corpus-"))
    release = args.release
    if release is None:
        from culturebench.builders import get_builder

        release = str(get_builder("borsch").build(out_root=root / "dist").folder)
    from culturebench.eval.dataset_ref import load_rows, resolve_dataset

    rows = load_rows(
        resolve_dataset("borsch", revision=None, local=release, repo=None), "parallel", "test", None
    )
    names = [r[k] for r in rows for k in ("name_ru", "name_uk") if r.get(k)]
    size = make_corpus(
        root / "corpus", args.shards, args.docs, names, ["Україні", "Росії", "Грузії", "Польщі"]
    )
    print(
        f"corpus: {args.shards} shards, {size / 1e6:.1f} MB of text; {len(rows)} dishes, {len(names)} names"
    )
    read = raw_read(root / "corpus")
    cold, cold_s = count_rate(root / "corpus", release, root / "out0", size)
    # the same job again in this process: imports done and the automaton built (a worker
    # counting many shards pays those once), so this is the per-byte rate
    one, one_s = count_rate(root / "corpus", release, root / "out1", size)
    two, _ = count_rate(root / "corpus", release, root / "out2", size, workers=2)
    print(f"raw read (gunzip + JSON), 1 core   {read:7.1f} MB/s   1.00x")
    print(
        f"corpus count, 1 process, first job {cold:7.1f} MB/s   {cold / read:4.2f}x of the read "
        f"(one-off setup: {cold_s - one_s:.2f} s of imports and automaton)"
    )
    print(f"corpus count, 1 process            {one:7.1f} MB/s   {one / read:4.2f}x of the read")
    scaling = two / one
    efficiency = f"{scaling / 2:.0%} efficient"
    print(f"corpus count, 2 local processes    {two:7.1f} MB/s   scaling {scaling:4.2f}x ({efficiency})")
    cluster = _on_local_cluster(root, release, size)
    if cluster:
        print(f"corpus count, Dask 2 workers       {cluster:7.1f} MB/s   scaling {cluster / one:4.2f}x")
    hours = args.mc4_tb * 1e12 / (one * 1e6) / 3600
    print(
        f"projection: {args.mc4_tb:g} TB of text (an assumed size; --mc4-tb) at {one:.1f} MB/s per core: "
        f"{hours:,.0f} core-hours; {hours / 64:,.1f} h on 64 cores, {hours / 512:,.1f} h on 512"
    )


def _on_local_cluster(root: Path, release: str, size: int) -> float | None:
    import logging

    from distributed import LocalCluster

    logging.getLogger("distributed").setLevel(logging.WARNING)
    with LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None) as cluster:
        rate, _ = count_rate(
            root / "corpus", release, root / "out3", size, scheduler=cluster.scheduler_address
        )
    return rate


if __name__ == "__main__":
    main()
