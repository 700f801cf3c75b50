"""Benchmark: ``corpus count`` throughput against the floors measured in the same run (``gzip
-dc`` and ``zstd -dc`` of the same shards to /dev/null, ``rg -z -F -i -f terms -c -j1`` with the
job's names when ripgrep is installed, and Python's raw read: decompress + JSON parse of the
text field), scaling from 1 to 2 workers (whole jobs on local processes and a local Dask
cluster on 127.0.0.1, and counting alone in warm worker processes), the matcher on one long
document against the same text split, and a projection.

Every rate is text bytes (UTF-8 of the text field) over the wall time of the whole job as a
user runs it: listing and fingerprinting the shards, loading the names, counting, merging and
writing the tables. Each row runs 3 times and prints min/median seconds and the median rate.

It generates its own corpus: Ukrainian-like documents (about 2 KB each) built from a seeded
vocabulary of real Ukrainian words plus random Cyrillic words, with the BORSCH sample's dish
names and country names planted in 5% of the documents, in paragraphs of ``--paragraphs``
sentences split by newlines (written ``\\n`` in the JSON, as in mC4), in gzip JSON Lines
shards (mC4's format), and the same shards recompressed with zstd.

    python benchmarks/bench_corpus.py [--shards 8] [--docs 4000] [--runs 3] [--release dist/borsch/1.0.0]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

_SPEC = None  # the count spec of a warm benchmark worker
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


def make_corpus(
    folder: Path, shards: int, docs: int, names: list[str], countries: list[str], paragraphs: int = 0
) -> int:
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
                sentences = [" ".join(words[i : i + 13]) + "." for i in range(0, 260, 13)]
                step = paragraphs or len(sentences)  # mC4's documents are paragraphs split by newlines
                text = "\n".join(" ".join(sentences[i : i + step]) for i in range(0, len(sentences), step))
                total += len(text.encode("utf-8"))
                handle.write(
                    json.dumps({"text": text, "url": "https://example.org"}, ensure_ascii=False) + "\n"
                )
    return total


def timed(function, runs: int) -> list[float]:
    """Seconds of ``runs`` calls."""
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        out.append(time.perf_counter() - start)
    return out


CPU: dict[str, list[float]] = {}  # label -> CPU seconds of each run (this process and its children)


def cpu_timed(label: str, function, runs: int) -> list[float]:
    """:func:`timed`, also keeping the CPU seconds of each run (user + system, of this process
    and of the children it waited for: ``rg -z`` decompresses in a ``gzip -d`` child)."""
    import resource

    def used() -> float:
        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    out, cpu = [], []
    for _ in range(runs):
        start, before = time.perf_counter(), used()
        function()
        out.append(time.perf_counter() - start)
        cpu.append(used() - before)
    CPU[label] = cpu
    return out


def row(label: str, size: int, seconds: list[float], base: float | None = None, what: str = "") -> float:
    """Print one row: min/median seconds, the median rate, its ratio to ``base`` (MB/s)."""
    rate = size / statistics.median(seconds) / 1e6
    ratio = f"  {rate / base:5.2f}x {what}" if base else ""
    print(f"{label:<40} {min(seconds):6.2f}/{statistics.median(seconds):6.2f} s  {rate:7.1f} MB/s{ratio}")
    return rate


def raw_read(corpus: Path) -> None:
    from culturebench.eval.corpus.shards import iter_texts, list_shards

    for s in list_shards(str(corpus)):
        for _ in iter_texts(s, "text"):
            pass


def shell(command: list[str], files: list[Path]) -> None:
    with open(os.devnull, "wb") as sink:
        subprocess.run([*command, *map(str, files)], stdout=sink, check=False)


def count_once(corpus: Path, release: str, out: Path, **engine) -> None:
    """One whole ``corpus count`` job into a fresh folder (nothing reused from a run before)."""
    from culturebench.eval.corpus.job import corpus_count

    shutil.rmtree(out, ignore_errors=True)
    corpus_count("borsch", str(corpus), out, lang="uk", local=release, **engine)


def long_document(names: list[str]) -> tuple[float, float, int]:
    """Seconds of :meth:`Matcher.find_many` on ~1 MB of text with dense hits as one document
    and as ~2 KB documents (best of 3), and the hits."""
    from culturebench.eval.corpus.matcher import Matcher, country_terms, dish_terms

    matcher = Matcher(dish_terms(("d", "uk", n) for n in names) + country_terms("uk"))
    rng = random.Random(1)
    words = [*WORDS, *(n.lower() for n in names[:40]), "Україні", "Польщі"]
    parts, size = [], 0
    while size < 1_000_000:
        part = " ".join(rng.choice(words) for _ in range(30)) + "."
        parts.append(part)
        size += len(part.encode("utf-8")) + 1
    docs = [" ".join(parts[i : i + 15]) for i in range(0, len(parts), 15)]
    text = " ".join(docs)
    matcher.find("прогрів")
    one = min(timed(lambda: matcher.find(text), 3))
    split = min(timed(lambda: matcher.find_many(docs), 3))
    return one, split, len(matcher.find(text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--docs", type=int, default=4000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--paragraphs", type=int, default=4, help="sentences per paragraph (0: one line per document)"
    )
    parser.add_argument("--no-dask", action="store_true", help="leave out the local Dask cluster row")
    parser.add_argument("--release", default=None, help="a BORSCH release folder (default: build the sample)")
    parser.add_argument(
        "--mc4-tb", type=float, default=1.0, help="assumed text size of the corpus to project"
    )
    args = parser.parse_args()
    print("load:", os.getloadavg(), f"({os.cpu_count()} cores)")
    root = Path(tempfile.mkdtemp(prefix="cb-bench-corpus-"))
    release = args.release
    if release is None:
        from culturebench.builders import get_builder

        release = str(get_builder("borsch").build(out_root=root / "dist").folder)
    from culturebench.eval.corpus.matcher import country_terms
    from culturebench.eval.dataset_ref import load_rows, resolve_dataset

    rows = load_rows(
        resolve_dataset("borsch", revision=None, local=release, repo=None), "parallel", "test", None
    )
    names = [r[k] for r in rows for k in ("name_ru", "name_uk") if r.get(k)]
    corpus = root / "corpus"
    countries = ["Україні", "Росії", "Грузії", "Польщі"]
    size = make_corpus(corpus, args.shards, args.docs, names, countries, args.paragraphs)
    gz = sorted(corpus.glob("*.json.gz"))
    zst = make_zstd(gz, root / "corpus-zst")
    print(
        f"corpus: {args.shards} shards, {size / 1e6:.1f} MB of text; {len(rows)} dishes, {len(names)} names"
    )
    runs = args.runs
    print(f"{'':<40} {'min/median':>15}  {'median':>12}")
    gunzip = row("gzip -dc > /dev/null", size, timed(lambda: shell(["gzip", "-dc"], gz), runs))
    unzstd = None
    if shutil.which("zstd"):
        unzstd = row("zstd -dc > /dev/null", size, timed(lambda: shell(["zstd", "-dcq"], zst), runs))
    rg = None
    if shutil.which("rg"):
        terms = root / "terms.txt"
        terms.write_text("\n".join(sorted({*names, *(t.name for t in country_terms("uk"))})) + "\n")
        command = ["rg", "-z", "-F", "-i", "-f", str(terms), "-c", "-j1"]
        rg = row(
            "rg -z -F -i -f terms -c -j1", size, cpu_timed("rg", lambda: shell(command, gz), runs), gunzip,
            "of gzip",
        )  # fmt: skip
    else:
        print("rg (ripgrep) is not installed: no ripgrep baseline")
    read = row(
        "raw read (Python: gunzip + JSON)", size, timed(lambda: raw_read(corpus), runs), gunzip, "of gzip"
    )
    out = iter(range(1_000_000))
    cold = timed(lambda: count_once(corpus, release, root / f"out{next(out)}"), 1)
    one = row(
        "corpus count gzip, 1 process", size,
        cpu_timed("ours", lambda: count_once(corpus, release, root / f"out{next(out)}"), runs), gunzip,
        "of gzip -dc",
    )  # fmt: skip
    print(f"{'':<40} (first job in this process: {cold[0]:.2f} s, imports and automaton included)")
    if rg:
        ours_cpu, rg_cpu = statistics.median(CPU["ours"]), statistics.median(CPU["rg"])
        print(f"{'':<40} {one / rg:5.2f}x of rg (wall clock)")
        print(
            f"{'':<40} {rg_cpu / ours_cpu:5.2f}x of rg in CPU seconds (ours {ours_cpu:.2f} s, "
            f"rg {rg_cpu:.2f} s with its gzip -d process)"
        )
    print(f"{'':<40} {one / read:5.2f}x of the Python raw read")
    if unzstd:
        row(
            "corpus count zstd, 1 process", size,
            timed(lambda: count_once(root / "corpus-zst", release, root / f"out{next(out)}"), runs),
            unzstd, "of zstd -dc",
        )  # fmt: skip
    two = row(
        "corpus count gzip, 2 local processes", size,
        timed(lambda: count_once(corpus, release, root / f"out{next(out)}", workers=2), runs), one,
        "of 1 process",
    )  # fmt: skip
    if not args.no_dask:
        cluster = _on_local_cluster(corpus, release, root, size, runs)
        row("corpus count gzip, Dask 2 workers", size, cluster, one, "of 1 process")
    steady = {n: steady_state(corpus, names, n, runs) for n in (1, 2)}
    for n, seconds in steady.items():
        row(f"counting only, {n} warm process{'es' if n > 1 else ''}", size, seconds,
            size / statistics.median(steady[1]) / 1e6 if n > 1 else None, "of 1 warm process")  # fmt: skip
    whole, split, hits = long_document(names)
    print(
        f"matcher, 1 MB with {hits:,} hits: one document {whole:.3f} s, ~2 KB documents {split:.3f} s "
        f"({whole / split:.2f}x)"
    )
    per_core = size / statistics.median(CPU["ours"]) / 1e6  # a process reads ahead in a second thread
    hours = args.mc4_tb * 1e12 / (per_core * 1e6) / 3600
    warm = statistics.median(steady[1]) / statistics.median(steady[2])
    print(
        f"projection: {args.mc4_tb:g} TB of text (an assumed size; --mc4-tb) at {per_core:.1f} MB per CPU "
        f"second (the 1-process job's CPU time, its read-ahead thread included; workers assumed to "
        f"scale with cores; measured here: {two / one:.2f}x for 2 as whole jobs, {warm:.2f}x for 2 warm "
        f"workers, on 2 cores): {hours:,.1f} core-hours; {hours / 64:,.2f} h on 64 cores"
    )
    print("load:", os.getloadavg())


def _warm_worker(names: list[str]) -> None:
    from culturebench.eval.corpus.count import CountSpec

    global _SPEC
    _SPEC = CountSpec("uk", "text", [(f"d{i}", "uk", n) for i, n in enumerate(names)], {})
    _SPEC.matcher().find_many(["борщ"])  # builds the automaton counting will use


def _count_in_worker(shard) -> None:
    from culturebench.eval.corpus.count import count_shard

    with tempfile.TemporaryDirectory() as parts:
        count_shard(shard, _SPEC, parts)


def steady_state(corpus: Path, names: list[str], workers: int, runs: int) -> list[float]:
    """Counting alone, in ``workers`` processes that already imported everything and built the
    automaton (what a long job's workers do after their start): the scaling a projection may
    assume, without the per-worker start that a 1-2 s job cannot amortise."""
    from concurrent.futures import ProcessPoolExecutor

    from culturebench.eval.corpus.shards import list_shards

    shards = list_shards(str(corpus))
    with ProcessPoolExecutor(workers, initializer=_warm_worker, initargs=(names,)) as pool:
        list(pool.map(_count_in_worker, shards[:workers]))  # every worker started and warm
        return timed(lambda: list(pool.map(_count_in_worker, shards)), runs)


def make_zstd(files: list[Path], folder: Path) -> list[Path]:
    """The same shards as zstd JSON Lines."""
    import zstandard

    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for path in files:
        target = folder / path.name.replace(".gz", ".zst")
        target.write_bytes(zstandard.ZstdCompressor(level=3).compress(gzip.decompress(path.read_bytes())))
        out.append(target)
    return out


def _on_local_cluster(corpus: Path, release: str, root: Path, size: int, runs: int) -> list[float]:
    import logging

    from distributed import LocalCluster

    logging.getLogger("distributed").setLevel(logging.WARNING)
    out = iter(range(1_000_000))
    with LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None) as cluster:
        return timed(
            lambda: count_once(
                corpus, release, root / f"dask{next(out)}", scheduler=cluster.scheduler_address
            ),
            runs,
        )


if __name__ == "__main__":
    main()
