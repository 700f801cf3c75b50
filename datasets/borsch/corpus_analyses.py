"""BORSCH §4.2-4.3 and App. C: analyses of a corpus count against evaluation runs.

The shared engine (``culturebench.eval.corpus``: ``culturebench corpus count``) counts the
names this dataset's ``corpus`` hook (:mod:`culturebench.datasets.borsch.corpus`) lists; these
analyses read its tables; this dataset adds their ``culturebench corpus`` commands
(:func:`culturebench.datasets.borsch.cli.register_corpus`):

- :func:`code_mixing`: the share of dish-name occurrences that use the other language's
  name, and QA Jaccard / dish-name VQA accuracy per log-spaced bin of the occurrence
  difference (corpus-language name minus other name), over dishes whose two names differ in
  their stems (Fig. 5, nine bins; names that differ only in endings, ПЕЛЬМЕНИ/ПЕЛЬМЕНІ, match
  the same text and are left out like identical names);
- :func:`cooccurrence_bins`: QA Jaccard per log-spaced bin of the correct co-occurrence count
  and of the correct co-occurrence ratio (Fig. 6, ten bins);
- :func:`sample_incorrect` / :func:`tabulate_annotations`: N incorrect co-occurrence
  sentences for annotation (at most a few per dish, seeded) and the shares of the paper's
  categories in the annotated file (Fig. 7);
- :func:`caption_share`: the share of dishes with any caption mention (App. C).

Bins are equal-width in log10(1 + count) (signed for differences; log10 of the ratio, with
ratio 0 in a bin of its own), from the smallest to the largest value observed.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError, Location, SourceError
from culturebench.inputs import csv_dict_reader

CATEGORIES = ("Scraping Errors", "Irrelevant Location", "Word Polysemy", "Inaccurate Origin", "Misc.")


# the columns each analysis reads from a count's tables
TABLE_COLUMNS = {
    "mentions": ("dish_id", "name_lang", "name", "occurrences", "documents"),
    "dishes": ("dish_id", "correct_cooccurrence", "correct_ratio"),
    "incorrect_samples": (
        "priority",
        "dish_id",
        "shard",
        "document",
        "other_countries",
        "origins",
        "sentence",
    ),
}


def _table(folder: Path, name: str) -> list[dict[str, Any]]:
    """A table of a corpus count; a missing, unreadable or foreign table is one line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(folder) / f"{name}.parquet"
    if not path.is_file():
        raise CultureBenchError(f"{folder} is not a corpus count (no {path.name})")
    try:
        table = pq.read_table(path)
    except (OSError, ValueError, pa.ArrowException) as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise CultureBenchError(f"{path}: unreadable table ({type(exc).__name__}: {first})") from None
    missing = [c for c in TABLE_COLUMNS.get(name, ()) if c not in table.column_names]
    if missing:
        raise CultureBenchError(f"{path}: not a corpus count table (no column {missing[0]!r})")
    return table.to_pylist()


def _csv_text(path: Path) -> str:
    """A CSV file's text (UTF-8, with or without a byte-order mark); other bytes are one line
    naming the file and line."""
    raw = Path(path).read_bytes()
    if b"\x00" in raw and raw[:2] not in (b"\xff\xfe", b"\xfe\xff"):
        line = raw.count(b"\n", 0, raw.index(b"\x00")) + 1
        raise CultureBenchError(f"{path}, line {line}: a NUL byte (binary data, or UTF-16 text?)")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
            what = "UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8 CSV"
        else:
            what = f"not UTF-8 text (byte 0x{raw[exc.start]:02x}); save it as UTF-8 CSV"
        raise CultureBenchError(f"{path}, line {line}: {what}") from None


def per_dish_scores(run: Path, metric: str, lang: str | None = None) -> dict[str, float]:
    """Mean ``metric`` per dish (row id) over a run's samples (prompts and seeds), optionally
    only the prompts in ``lang``."""
    from culturebench.eval.run_folder import SAMPLES, read_run, read_samples

    read_run(run)
    values: dict[str, list[float]] = defaultdict(list)
    samples: Sequence[Mapping[str, Any]] = read_samples(Path(run) / SAMPLES)  # ``metric``: the task's
    for sample in samples:
        if lang and sample.get("lang") != lang:
            continue
        if sample.get(metric) is not None:
            values[sample["row_id"]].append(float(sample[metric]))
    if not values:
        raise CultureBenchError(f"{run}: no samples with {metric!r}" + (f" in {lang}" if lang else ""))
    return {dish: sum(v) / len(v) for dish, v in values.items()}


def _count_config(record: dict[str, Any]) -> str:
    """The dataset config a corpus count was made of, as words (``config parallel``)."""
    return f"config {record.get('config') or 'parallel'}"


def _run_config(run: Path) -> str:
    """The dataset config of an eval run, as words, for messages (``config ru``)."""
    from culturebench.eval.run_folder import read_run

    config = read_run(run).get("config")
    return f"config {config}" if config else "an unknown config"


def _scored_in_count(
    run: Path, scores: dict[str, float], dishes: Sequence[str], count: Path, record: dict[str, Any]
) -> None:
    """Refuse an analysis none of whose count dishes the run scored: empty tables would look
    like a result. The message names both sides (typically a run of another config)."""
    if set(scores) & set(dishes):
        return
    raise CultureBenchError(
        f"{run}: none of its {len(scores)} scored dishes ({_run_config(run)}) is among the "
        f"{len(dishes)} dishes of the count {count} ({_count_config(record)}, corpus "
        f"{record['corpus_lang']}); give a run of {_count_config(record)} in {record['corpus_lang']}"
    )


def _log1p(v: float) -> float:
    return math.log10(1 + v)


def _signed_log1p(v: float) -> float:
    return math.copysign(math.log10(1 + abs(v)), v)


TRANSFORMS = {
    "log1p": (_log1p, lambda t: 10**t - 1),
    "signed_log1p": (_signed_log1p, lambda t: math.copysign(10 ** abs(t) - 1, t)),
    "log": (math.log10, lambda t: 10**t),
}


def log_bins(
    values: Sequence[float], bins: int, transform: str = "log1p"
) -> tuple[list[int], list[tuple[float, float]]]:
    """The bin (0 .. bins-1) of each value and each bin's (from, to) on the value scale:
    equal-width bins of the transformed values between their smallest and largest."""
    forward, inverse = TRANSFORMS[transform]
    transformed = [forward(v) for v in values]
    if not transformed:
        return [], []
    low, high = min(transformed), max(transformed)
    width = (high - low) / bins or 1.0
    keys = [min(bins - 1, int((t - low) / width)) for t in transformed]
    edges = [(inverse(low + k * width), inverse(low + (k + 1) * width)) for k in range(bins)]
    return keys, edges


def _binned(
    values: dict[str, float], scores: dict[str, float], bins: int, transform: str = "log1p"
) -> list[dict[str, Any]]:
    """Mean score and dish count per bin (dishes with a value and a score)."""
    dishes = [d for d in values if d in scores]
    if not dishes:
        return []
    keys, edges = log_bins([values[d] for d in dishes], bins, transform)
    out = []
    for k in range(bins):
        members = [d for d, b in zip(dishes, keys, strict=True) if b == k]
        out.append(
            {
                "bin": k,
                "from": round(edges[k][0], 4),
                "to": round(edges[k][1], 4),
                "n_dishes": len(members),
                "score": sum(scores[d] for d in members) / len(members) if members else None,
            }
        )
    return out


def _differ(a: str, b: str) -> bool:
    """Whether a corpus can tell two names apart: different stems (not only other endings)."""
    from culturebench.eval.corpus.matcher import name_key

    return name_key(a) != name_key(b)


def code_mixing(
    count: Path, *, qa: Path | None = None, vqa: Path | None = None, bins: int = 9
) -> dict[str, Any]:
    """Fig. 5 and the §4.2 shares for one corpus language (a ``parallel`` count)."""
    from culturebench.eval.corpus.job import read_count

    record = read_count(count)
    lang = record["corpus_lang"]
    by_dish: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in _table(count, "mentions"):
        by_dish[row["dish_id"]][row["name_lang"]] = row
    if not by_dish:
        raise CultureBenchError(f"{count}: the count's mentions table has no rows (no dish names counted)")
    other = "ru" if lang == "uk" else "uk"
    distinct = {
        d: names
        for d, names in by_dish.items()
        if lang in names and other in names and _differ(names[lang]["name"], names[other]["name"])
    }
    own = sum(n[lang]["occurrences"] for n in distinct.values())
    mixed = sum(n[other]["occurrences"] for n in distinct.values())
    if not distinct:
        raise CultureBenchError(
            f"{count}: no dish has both a {lang} and a {other} name that differ ({len(by_dish)} dishes, "
            f"{_count_config(record)}); code-mixing reads a count of config parallel"
        )
    difference = {d: float(n[lang]["occurrences"] - n[other]["occurrences"]) for d, n in distinct.items()}
    out: dict[str, Any] = {
        "corpus_lang": lang,
        "n_dishes_distinct_names": len(distinct),
        "n_dishes_same_name": len(by_dish) - len(distinct),  # equal, or equal stems
        "occurrences_own_name": own,
        "occurrences_other_name": mixed,
        "code_mixing_share": mixed / (own + mixed) if own + mixed else None,
    }
    if qa:
        scores = per_dish_scores(qa, "jaccard", lang)
        _scored_in_count(qa, scores, list(difference), count, record)
        out["qa_jaccard_by_difference"] = _binned(difference, scores, bins, "signed_log1p")
    if vqa:
        scores = per_dish_scores(vqa, "correct", lang)
        _scored_in_count(vqa, scores, list(difference), count, record)
        out["vqa_accuracy_by_difference"] = _binned(difference, scores, bins, "signed_log1p")
    return out


def cooccurrence_bins(count: Path, qa: Path, *, bins: int = 10) -> dict[str, Any]:
    """Fig. 6: QA Jaccard per log-spaced bin of correct co-occurrence count and ratio."""
    from culturebench.eval.corpus.job import read_count

    record = read_count(count)
    lang = record["corpus_lang"]
    dishes = _table(count, "dishes")
    if not dishes:
        raise CultureBenchError(f"{count}: the count's dishes table has no rows (no dishes counted)")
    scores = per_dish_scores(qa, "jaccard", lang)
    _scored_in_count(qa, scores, [d["dish_id"] for d in dishes], count, record)
    counts = {d["dish_id"]: float(d["correct_cooccurrence"]) for d in dishes}
    ratios = {d["dish_id"]: d["correct_ratio"] for d in dishes if d["correct_ratio"] is not None}
    positive = {d: r for d, r in ratios.items() if r > 0}
    zero = [d for d, r in ratios.items() if r == 0 and d in scores]
    by_ratio = _binned(positive, scores, bins, "log")
    return {
        "corpus_lang": lang,
        "n_dishes": len(counts),
        "qa_jaccard_by_correct_count": _binned(counts, scores, bins),
        "qa_jaccard_by_correct_ratio": by_ratio,
        "ratio_zero": {
            "n_dishes": len(zero),
            "score": sum(scores[d] for d in zero) / len(zero) if zero else None,
        },
        "n_dishes_without_country_mention": len(counts) - len(ratios),
    }


def sample_incorrect(count: Path, n: int, out: Path) -> Path:
    """The ``n`` incorrect co-occurrences with the lowest seeded priority (already at most
    ``per_dish`` per dish) as a CSV for annotators, with an empty ``category`` column."""
    from culturebench.atomic import write_text_atomic
    from culturebench.eval.corpus.job import read_count

    record = read_count(count)
    names: dict[str, list[str]] = defaultdict(list)
    for row in _table(count, "mentions"):
        names[row["dish_id"]].append(row["name"])
    rows = sorted(_table(count, "incorrect_samples"), key=lambda r: r["priority"])[:n]
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = ["id", "language", "dish_id", "dish_names", "origins", "other_countries", "sentence"]
    writer.writerow([*header, "shard", "document", "category"])
    for k, r in enumerate(rows, start=1):
        dish_names = " / ".join(dict.fromkeys(names[r["dish_id"]]))
        origins, others = " ".join(r["origins"]), " ".join(r["other_countries"])
        writer.writerow(
            [
                k,
                record["corpus_lang"],
                r["dish_id"],
                dish_names,
                origins,
                others,
                r["sentence"],
                r["shard"],
                r["document"],
                "",
            ]
        )
    write_text_atomic(out, buffer.getvalue())
    return out


def read_annotations(path: Path) -> dict[str, Any]:
    """One annotated sample CSV's category shares (how ``eval paper --input annotations_*``
    is checked before any item runs)."""
    return tabulate_annotations([path])


def tabulate_annotations(paths: Sequence[Path]) -> dict[str, Any]:
    """Shares of the paper's Fig. 7 categories per language in annotated sample CSVs."""
    table: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(CATEGORIES, 0))
    for path in paths:
        if not Path(path).is_file():
            raise SourceError(Location(str(path)), "no such file")
        reader = csv_dict_reader(io.StringIO(_csv_text(path), newline=""))
        rows = 0
        try:
            for column in ("language", "category"):
                if column not in (reader.fieldnames or []):
                    raise SourceError(Location(Path(path).name, 1, column), "missing column")
            for number, row in enumerate(reader, start=2):
                category = (row["category"] or "").strip()
                match = next(
                    (c for c in CATEGORIES if c.casefold().rstrip(".") == category.casefold().rstrip(".")),
                    None,
                )
                if match is None:
                    raise SourceError(
                        Location(Path(path).name, number, "category"),
                        f"{category!r} is not one of {', '.join(CATEGORIES)}",
                    )
                table[row["language"]][match] += 1
                rows += 1
        except csv.Error as exc:  # a NUL byte, an unclosed quote at the end
            raise CultureBenchError(f"{path}, line {reader.line_num}: not a readable CSV ({exc})") from None
        if not rows:
            raise SourceError(Location(str(path)), "no annotated rows (only a header)")
    return {
        lang: {"n": sum(counts.values()), **{c: v / sum(counts.values()) for c, v in counts.items()}}
        for lang, counts in sorted(table.items())
    }


def caption_share(count: Path) -> dict[str, Any]:
    """App. C: share of dishes with at least one caption mentioning any of their names, per
    name language (and for any name)."""
    mentions = _table(count, "mentions")
    if not mentions:
        raise CultureBenchError(f"{count}: the count's mentions table has no rows (no dish names counted)")
    dishes: dict[str, dict[str, int]] = defaultdict(dict)
    for row in mentions:
        dishes[row["dish_id"]][row["name_lang"]] = row["documents"]
    out: dict[str, Any] = {"n_dishes": len(dishes)}
    for lang in sorted({lang for names in dishes.values() for lang in names}):
        having = [d for d, names in dishes.items() if lang in names]
        out[f"share_{lang}_name"] = sum(1 for d in having if dishes[d][lang] > 0) / len(having)
    out["share_any_name"] = sum(1 for names in dishes.values() if any(v > 0 for v in names.values())) / len(
        dishes
    )
    return out
