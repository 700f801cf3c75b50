"""The corpus count job: per shard, dish-name mentions and dish-country co-occurring documents;
merged exactly once per shard into Parquet tables.

Per shard, one part file ``parts/<shard id>.json`` is written atomically; a retried or rerun
shard rewrites its own part, and the merge reads exactly one part per listed shard, so no
shard is ever counted twice, whatever the engine did. A part made with another job spec (other
names, matcher version or corpus column) is recomputed.

Counts (documents are the unit the paper counts; mentions are occurrences):
- ``mentions``: per (dish, name language): occurrences and documents;
- ``cooccurrence``: per (dish, country): documents mentioning both;
- ``dishes``: per dish: documents mentioning it, with any country, with a true origin
  (the correct co-occurrence count) and the correct co-occurrence ratio (correct / any).
- ``incorrect_samples``: candidate sentences where a dish co-occurs with a country that is not
  its origin, at most ``per_dish`` per dish, chosen by the lowest seeded hash of (dish, the
  document's text): the same sample on any engine, shard order, file name or modification time.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from culturebench.eval.corpus.json_texts import JsonTexts
from culturebench.eval.corpus.matcher import (
    MATCHER_VERSION,
    Matcher,
    country_terms,
    dish_terms,
    sentence_around,
)
from culturebench.eval.corpus.shards import CorpusShard, iter_texts


@dataclass
class CountSpec:
    """What one count job looks for (everything a worker needs; it pickles small)."""

    corpus_lang: str
    column: str
    dishes: list[tuple[str, str, str]]  # (dish id, name language, name)
    origins: dict[str, list[str]]
    seed: int = 0
    per_dish: int = 3
    _matcher: Matcher | None = field(default=None, repr=False, compare=False)

    def digest(self) -> str:
        """What makes two parts comparable: names, origins, language, column, rule version."""
        payload = {
            "lang": self.corpus_lang,
            "column": self.column,
            "dishes": sorted(self.dishes),
            "origins": {k: sorted(v) for k, v in sorted(self.origins.items())},
            "seed": self.seed,
            "per_dish": self.per_dish,
            "matcher": MATCHER_VERSION,
            "sample_rule": SAMPLE_RULE,
        }
        return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()[:20]

    def matcher(self) -> Matcher:
        """The job's matcher, built once per process: a worker that counts many shards (each
        task unpickles its own spec) reuses the automaton it built for the first."""
        if self._matcher is None:
            digest = self.digest()
            if digest not in _MATCHERS:
                _MATCHERS.clear()  # one job's automaton at a time
                _MATCHERS[digest] = Matcher(dish_terms(self.dishes) + country_terms(self.corpus_lang))
            self._matcher = _MATCHERS[digest]
        return self._matcher

    def __getstate__(self) -> dict:
        state = {k: v for k, v in asdict(self).items() if k != "_matcher"}
        return state

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)  # type: ignore[misc]


_MATCHERS: dict[str, Matcher] = {}


#: how the annotation sample is drawn (in each part's digest: a part drawn by another rule is
#: recomputed). 2: by the document's own text, not the shard's fingerprint and position.
SAMPLE_RULE = 2


def _priority(seed: int, text: str, dish: str) -> str:
    """A document's place in the annotation sample of ``dish``: a seeded hash of its text, so
    the same corpus bytes give the same sample whatever the shards' names, order, modification
    times or fingerprints (``--full-hash``)."""
    digest = hashlib.sha256(f"{seed}\n{dish}\n".encode())
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


def count_shard(shard: CorpusShard, spec: CountSpec, parts_dir: str) -> str:
    """Count one shard into ``parts_dir/<shard id>.json`` and return that path; a valid part
    for this shard and spec is kept as it is (a retried task does no work twice)."""
    from culturebench.eval.corpus.engine import has_part, part_path, write_part

    path = part_path(parts_dir, shard.id)
    digest = spec.digest()
    if has_part(path, shard.id, digest):
        return str(path)
    matcher = spec.matcher()
    mentions: Counter = Counter()
    mention_docs: Counter = Counter()
    dish_docs: Counter = Counter()
    any_country: Counter = Counter()
    correct: Counter = Counter()
    cooc: Counter = Counter()
    samples: dict[str, list[tuple[str, int, list[str], str]]] = defaultdict(list)
    docs = 0
    size = 0
    for batch in iter_texts(shard, spec.column, literals=True):
        found = matcher.find_many(batch)  # one scan per batch
        # characters (counting UTF-8 bytes would cost an encode per document)
        size += batch.chars if isinstance(batch, JsonTexts) else sum(map(len, batch))
        for index, hits in enumerate(found):
            doc = docs + index
            if not hits:
                continue
            text = batch[index]  # decoded only where a name is
            countries = {h.key[1] for h in hits if h.key[0] == "country"}
            country_hits = [h for h in hits if h.key[0] == "country"]
            first_hit: dict[str, Any] = {}
            names: Counter = Counter()
            for h in hits:
                if h.key[0] == "dish":
                    names[(h.key[1], h.key[2])] += 1
                    first_hit.setdefault(h.key[1], h)
            for key, n in names.items():
                mentions[key] += n
                mention_docs[key] += 1
            for dish, hit in first_hit.items():
                dish_docs[dish] += 1
                truth = set(spec.origins.get(dish, []))
                for code in countries:
                    cooc[(dish, code)] += 1
                if countries:
                    any_country[dish] += 1
                if countries & truth:
                    correct[dish] += 1
                wrong = sorted(countries - truth)
                if wrong:
                    entry = (_priority(spec.seed, text, dish), doc, wrong, "")
                    kept = samples[dish]
                    if len(kept) < spec.per_dish or entry[0] < max(k[0] for k in kept):
                        near = min(
                            (c for c in country_hits if c.key[1] in wrong),
                            key=lambda c: abs(c.start - hit.start),
                        )
                        sentence = sentence_around(text, min(hit.start, near.start), max(hit.end, near.end))
                        kept.append((entry[0], doc, wrong, sentence))
                        kept.sort()
                        del kept[spec.per_dish :]
        docs += len(batch)
    part = {
        "shard": shard.id,
        "url": shard.url,
        "spec": digest,
        "documents": docs,
        "characters": size,
        "mentions": [[d, lang, n, mention_docs[(d, lang)]] for (d, lang), n in sorted(mentions.items())],
        "dish_docs": dict(sorted(dish_docs.items())),
        "any_country": dict(sorted(any_country.items())),
        "correct": dict(sorted(correct.items())),
        "cooccurrence": [[d, c, n] for (d, c), n in sorted(cooc.items())],
        "samples": {
            d: [[p, shard.url, doc, wrong, s] for p, doc, wrong, s in kept]
            for d, kept in sorted(samples.items())
        },
    }
    return write_part(path, part)


# ---------------------------------------------------------------------- engine
def run_shards(
    shards: Sequence[CorpusShard],
    spec: CountSpec,
    parts_dir: Path,
    *,
    scheduler: str | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Count every shard with :func:`culturebench.eval.corpus.engine.run_tasks`;
    ``progress(done, total)`` in bytes of the shards as stored."""
    from culturebench.eval.corpus.engine import run_tasks

    parts_dir.mkdir(parents=True, exist_ok=True)
    kwargs = {"spec": spec, "parts_dir": str(parts_dir)}
    run_tasks(
        count_shard,
        list(shards),
        kwargs=kwargs,
        scheduler=scheduler,
        workers=workers,
        progress=progress,
        sizes=[s.size for s in shards],
    )


def merge_parts(shards: Sequence[CorpusShard], spec: CountSpec, parts_dir: Path) -> dict[str, Any]:
    """Sum the one part of each listed shard (a part of another spec or a missing part is an
    error: nothing is guessed)."""
    from culturebench.errors import CultureBenchError

    digest = spec.digest()
    mentions: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    dish_docs: Counter = Counter()
    any_country: Counter = Counter()
    correct: Counter = Counter()
    cooc: Counter = Counter()
    samples: dict[str, list] = defaultdict(list)
    documents = size = 0
    for shard in shards:
        path = parts_dir / f"{shard.id}.json"
        try:
            part = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            raise CultureBenchError(f"{path}: missing or unreadable part for shard {shard.url}") from None
        if not isinstance(part, dict) or part.get("spec") != digest or part.get("shard") != shard.id:
            spec_of = part.get("spec") if isinstance(part, dict) else None
            raise CultureBenchError(f"{path}: a part of another job (spec {spec_of}, this job {digest})")
        try:
            documents += part["documents"]
            size += part["characters"]
            for d, lang, n, docs in part["mentions"]:
                mentions[(d, lang)][0] += n
                mentions[(d, lang)][1] += docs
            dish_docs.update(part["dish_docs"])
            any_country.update(part["any_country"])
            correct.update(part["correct"])
            for d, c, n in part["cooccurrence"]:
                cooc[(d, c)] += n
            for d, kept in part["samples"].items():
                samples[d].extend(kept)
        except (KeyError, TypeError, ValueError, AttributeError):
            raise CultureBenchError(
                f"{path}: a damaged part (delete it; the next run recounts its shard)"
            ) from None
    for d in samples:
        samples[d] = sorted(samples[d])[: spec.per_dish]
    return {
        "documents": documents,
        "characters": size,
        "mentions": mentions,
        "dish_docs": dish_docs,
        "any_country": any_country,
        "correct": correct,
        "cooccurrence": cooc,
        "samples": samples,
    }


def write_tables(merged: dict[str, Any], spec: CountSpec, out: Path) -> list[Path]:
    """``mentions``, ``cooccurrence``, ``dishes`` and ``incorrect_samples`` as Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    names: dict[str, dict[str, str]] = defaultdict(dict)
    for dish, lang, name in spec.dishes:
        names[dish][lang] = name
    dishes = sorted(names)
    tables = {
        "mentions": {
            "dish_id": [d for d in dishes for lang in sorted(names[d])],
            "name_lang": [lang for d in dishes for lang in sorted(names[d])],
            "name": [names[d][lang] for d in dishes for lang in sorted(names[d])],
            "occurrences": [
                merged["mentions"].get((d, lang), [0, 0])[0] for d in dishes for lang in sorted(names[d])
            ],
            "documents": [
                merged["mentions"].get((d, lang), [0, 0])[1] for d in dishes for lang in sorted(names[d])
            ],
        },
        "cooccurrence": {
            "dish_id": [d for d, _ in sorted(merged["cooccurrence"])],
            "country": [c for _, c in sorted(merged["cooccurrence"])],
            "documents": [merged["cooccurrence"][k] for k in sorted(merged["cooccurrence"])],
            "is_origin": [c in spec.origins.get(d, []) for d, c in sorted(merged["cooccurrence"])],
        },
        "dishes": {
            "dish_id": dishes,
            "origins": [sorted(spec.origins.get(d, [])) for d in dishes],
            "documents": [merged["dish_docs"].get(d, 0) for d in dishes],
            "documents_with_country": [merged["any_country"].get(d, 0) for d in dishes],
            "correct_cooccurrence": [merged["correct"].get(d, 0) for d in dishes],
            "correct_ratio": [
                merged["correct"].get(d, 0) / merged["any_country"][d]
                if merged["any_country"].get(d)
                else None
                for d in dishes
            ],
        },
    }
    rows = sorted(
        (p, d, url, doc, wrong, s) for d, kept in merged["samples"].items() for p, url, doc, wrong, s in kept
    )
    tables["incorrect_samples"] = {
        "priority": [r[0] for r in rows],
        "dish_id": [r[1] for r in rows],
        "shard": [r[2] for r in rows],
        "document": [r[3] for r in rows],
        "other_countries": [r[4] for r in rows],
        "origins": [sorted(spec.origins.get(r[1], [])) for r in rows],
        "sentence": [r[5] for r in rows],
    }
    paths = []
    for name, columns in tables.items():
        path = out / f"{name}.parquet"
        pq.write_table(pa.table(columns), path)
        paths.append(path)
    return paths
