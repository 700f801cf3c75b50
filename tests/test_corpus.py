"""Pretraining-corpus analysis (BORSCH §4.2-4.3, App. C): counts over test-made Russian and
Ukrainian corpora with known mentions, the same on one process, a local process pool and a
real Dask cluster on 127.0.0.1 (stopped by PID), shards read exactly once, and the analyses."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app

# the corpus engine: Aho-Corasick, zstd, Dask
pytestmark = [pytest.mark.integration, pytest.mark.extra("corpus")]

# Documents written for the test: every dish mention and country is known, inflections included.
UK_DOCS = [
    "Борщ — українська страва. В Україні борщ варять щодня.",  # dish 1 (UA origin) + UA
    "Найкращий борщ їв у Польщі, а пельмені у Росії.",  # dish 1 + PL (wrong), dish 2 + RU
    "Вареники з вишнями. Варениками частували гостей.",  # dish 3 twice, no country
    "Пельмени по-русски: рецепт пельменей из России.",  # dish 2 by its Russian name, RU
    "Тут нічого про їжу, лише Франція і Грузія.",  # countries only
    "Борщевик — це рослина, а не страва.",  # not a dish: another word
]
DISHES = [("d1", "uk", "БОРЩ"), ("d1", "ru", "БОРЩ"), ("d2", "uk", "ПЕЛЬМЕНІ"), ("d2", "ru", "ПЕЛЬМЕНИ"),
          ("d3", "uk", "ВАРЕНИКИ"), ("d3", "ru", "ВАРЕНИКИ")]  # fmt: skip
ORIGINS = {"d1": ["UA"], "d2": ["RU"], "d3": ["UA"]}


def test_matcher_finds_inflected_names_and_countries() -> None:
    from culturebench.eval.corpus.matcher import Matcher, country_terms, dish_terms

    matcher = Matcher(dish_terms(DISHES) + country_terms("uk"))
    found = [matcher.count(doc) for doc in UK_DOCS]
    assert found[0][("dish", "d1", "uk")] == 2 and found[0][("country", "UA")] == 2  # українська, Україні
    assert (
        found[1][("dish", "d2", "uk")] == 1
        and found[1][("country", "PL")] == 1
        and found[1][("country", "RU")] == 1
    )
    assert found[2][("dish", "d3", "uk")] == 2  # Вареники, Варениками
    # ПЕЛЬМЕНИ and ПЕЛЬМЕНІ share the stem "пельмен": both match (code mixing leaves such dishes out)
    assert found[3][("dish", "d2", "ru")] == 2 and found[3][("dish", "d2", "uk")] == 2
    assert not any(key[0] == "dish" for key in found[4]) and found[4][("country", "FR")] == 1
    assert found[5] == {}  # "Борщевик" is another word


def _write_corpus(folder: Path, copies: int = 4) -> Path:
    """Three shards in three formats: JSONL.gz, JSONL.zst and Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard

    folder.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in UK_DOCS * copies)
    with gzip.open(folder / "a.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write(lines)
    (folder / "b.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(lines.encode("utf-8")))
    pq.write_table(
        pa.table({"text": UK_DOCS * copies, "url": ["x"] * len(UK_DOCS) * copies}), folder / "c.parquet"
    )
    return folder


def _spec():
    from culturebench.eval.corpus.count import CountSpec

    return CountSpec(corpus_lang="uk", column="text", dishes=DISHES, origins=ORIGINS, seed=0, per_dish=2)


def _tables(folder: Path) -> dict[str, list]:
    import pyarrow.parquet as pq

    return {
        n: pq.read_table(folder / f"{n}.parquet").to_pylist()
        for n in ("mentions", "cooccurrence", "dishes", "incorrect_samples")
    }


def _count(tmp_path: Path, name: str, **engine) -> dict[str, list]:
    from culturebench.eval.corpus.count import merge_parts, run_shards, write_tables
    from culturebench.eval.corpus.shards import list_shards

    shards = list_shards(str(tmp_path / "corpus"))
    out = tmp_path / name
    run_shards(shards, _spec(), out / "parts", **engine)
    write_tables(merge_parts(shards, _spec(), out / "parts"), _spec(), out)
    return _tables(out)


def test_counts_by_hand_and_identical_on_one_or_two_processes(tmp_path: Path) -> None:
    _write_corpus(tmp_path / "corpus")
    one = _count(tmp_path, "one")
    two = _count(tmp_path, "two", workers=2)
    assert one == two
    mentions = {(r["dish_id"], r["name_lang"]): (r["occurrences"], r["documents"]) for r in one["mentions"]}
    shards, copies = 3, 4
    assert mentions[("d1", "uk")] == (3 * copies * shards, 2 * copies * shards)  # docs 0 and 1
    assert mentions[("d2", "ru")] == (3 * copies * shards, 2 * copies * shards)  # shared stem: docs 1, 3
    dishes = {r["dish_id"]: r for r in one["dishes"]}
    # d1: docs 0 (UA: correct) and 1 (PL, RU: wrong) -> ratio 1/2
    assert (
        dishes["d1"]["documents"] == 2 * copies * shards
        and dishes["d1"]["correct_cooccurrence"] == copies * shards
    )
    assert dishes["d1"]["correct_ratio"] == pytest.approx(0.5)
    assert dishes["d3"]["documents_with_country"] == 0 and dishes["d3"]["correct_ratio"] is None
    cooc = {(r["dish_id"], r["country"]): r["documents"] for r in one["cooccurrence"]}
    # doc 3 names Russia in Russian ("России"): country names are the corpus language's (uk) only
    assert cooc[("d1", "PL")] == copies * shards and cooc[("d2", "RU")] == copies * shards
    samples = one["incorrect_samples"]
    # doc 1 puts d1 (UA) with PL and RU, and d2 (RU) with PL: two dishes, at most per_dish = 2 each
    assert sorted(r["dish_id"] for r in samples) == ["d1", "d1", "d2", "d2"]
    assert all("Польщі" in r["sentence"] for r in samples)
    assert {tuple(r["other_countries"]) for r in samples} == {("PL", "RU"), ("PL",)}


def test_a_retried_shard_is_counted_once_and_stale_parts_are_redone(tmp_path: Path) -> None:
    from culturebench.eval.corpus.count import CountSpec, count_shard, merge_parts
    from culturebench.eval.corpus.shards import list_shards

    _write_corpus(tmp_path / "corpus")
    shards = list_shards(str(tmp_path / "corpus"))
    parts = tmp_path / "parts"
    for shard in shards:
        count_shard(shard, _spec(), str(parts))
    count_shard(shards[0], _spec(), str(parts))  # a retry: rewrites its own part, never adds one
    assert len(list(parts.iterdir())) == 3
    merged = merge_parts(shards, _spec(), parts)
    assert merged["documents"] == 3 * len(UK_DOCS) * 4
    other = CountSpec(corpus_lang="uk", column="text", dishes=DISHES[:2], origins=ORIGINS)
    with pytest.raises(Exception, match="a part of another job"):
        merge_parts(shards, other, parts)
    (parts / f"{shards[1].id}.json").unlink()
    with pytest.raises(Exception, match="missing or unreadable part"):
        merge_parts(shards, _spec(), parts)


def test_bad_shards_are_one_line_errors(tmp_path: Path) -> None:
    from culturebench.eval.corpus.shards import CorpusError, CorpusShard, iter_texts, list_shards

    (tmp_path / "bad.jsonl").write_text('{"text": "ok"}\nnot json\n', encoding="utf-8")
    with pytest.raises(CorpusError, match=r"bad\.jsonl, line 2: not JSON"):
        list(iter_texts(CorpusShard(str(tmp_path / "bad.jsonl"), 1, "x"), "text"))
    (tmp_path / "nofield.jsonl").write_text('{"body": "x"}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match="no field 'text'"):
        list(iter_texts(CorpusShard(str(tmp_path / "nofield.jsonl"), 1, "x"), "text"))
    with pytest.raises(CorpusError, match="no such file"):
        list_shards(str(tmp_path / "missing" / "*.jsonl"))


@pytest.fixture
def borsch_corpus(borsch_release, tmp_path: Path) -> tuple[Path, list[dict]]:
    """A Ukrainian corpus naming the sample release's parallel dishes (by their Ukrainian or
    Russian names), with true or wrong countries."""
    import random

    from culturebench.eval.dataset_ref import load_rows, resolve_dataset

    rows = load_rows(
        resolve_dataset("borsch", revision=None, local=str(borsch_release.folder), repo=None),
        "parallel",
        "test",
        None,
    )
    rng = random.Random(1)
    countries = {"UA": "Україні", "RU": "Росії", "GE": "Грузії", "PL": "Польщі"}
    docs = []
    for k in range(300):
        row = rows[k % len(rows)]
        name = row["name_uk"] if k % 3 else row["name_ru"]
        code = rng.choice(list(countries))
        docs.append({"text": f"Сьогодні готуємо {name.lower()}. Цю страву люблять у {countries[code]}."})
    folder = tmp_path / "corpus"
    folder.mkdir()
    for s in range(3):
        with gzip.open(folder / f"uk-{s}.jsonl.gz", "wt", encoding="utf-8") as handle:
            handle.writelines(json.dumps(d, ensure_ascii=False) + "\n" for d in docs[s::3])
    return folder, rows


def test_cli_count_then_analyses(borsch_release, borsch_corpus, scripted_backend, tmp_path: Path) -> None:
    from culturebench.eval.corpus.matcher import MATCHER_VERSION
    from culturebench.eval.runner import run_eval

    corpus, rows = borsch_corpus
    out = tmp_path / "count"
    result = CliRunner().invoke(
        app,
        ["corpus", "count", "borsch", "--corpus", str(corpus), "--lang", "uk",
         "--local", str(borsch_release.folder), "--out", str(out), "--workers", "2"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    record = json.loads((out / "count.json").read_text(encoding="utf-8"))
    assert record["documents"] == 300 and len(record["shards"]) == 3
    # size + a sampled sha256 (size, mtime, blocks of the file)
    assert all(len(s["fingerprint"]) == 8 + 64 and s["size"] > 0 for s in record["shards"])
    assert record["dataset"]["manifest_sha256"] and record["matcher_version"] == MATCHER_VERSION
    # QA run answering "Україна" for every dish: Jaccard 1 for Ukrainian dishes, else 0
    qa = tmp_path / "qa"
    run_eval(
        "borsch",
        "origin-qa",
        scripted_backend("Україна."),
        qa,
        local=str(borsch_release.folder),
        langs=["uk"],
    )
    mixing = CliRunner().invoke(
        app, ["corpus", "code-mixing", str(out), "--qa", str(qa), "--out", str(tmp_path / "cm.json")]
    )
    assert mixing.exit_code == 0, mixing.output
    cm = json.loads((tmp_path / "cm.json").read_text(encoding="utf-8"))
    assert cm["n_dishes_distinct_names"] + cm["n_dishes_same_name"] == len(rows)
    assert 0 < cm["code_mixing_share"] < 1 and len(cm["qa_jaccard_by_difference"]) == 9
    assert sum(b["n_dishes"] for b in cm["qa_jaccard_by_difference"]) == cm["n_dishes_distinct_names"]
    co = CliRunner().invoke(
        app, ["corpus", "cooccurrence", str(out), "--qa", str(qa), "--out", str(tmp_path / "co.json")]
    )
    assert co.exit_code == 0, co.output
    bins = json.loads((tmp_path / "co.json").read_text(encoding="utf-8"))
    assert len(bins["qa_jaccard_by_correct_count"]) == 10
    assert (tmp_path / "co_qa_jaccard_by_correct_count.png").is_file()
    sample = CliRunner().invoke(
        app, ["corpus", "sample", str(out), "--n", "20", "--out", str(tmp_path / "s.csv")]
    )
    assert sample.exit_code == 0, sample.output
    import csv

    with open(tmp_path / "s.csv", encoding="utf-8", newline="") as handle:
        drawn = list(csv.DictReader(handle))
    assert (
        len(drawn) == 20
        and max(sum(1 for r in drawn if r["dish_id"] == d) for d in {r["dish_id"] for r in drawn}) <= 3
    )
    assert all(set(r["other_countries"].split()).isdisjoint(r["origins"].split()) for r in drawn)
    again = CliRunner().invoke(
        app, ["corpus", "sample", str(out), "--n", "20", "--out", str(tmp_path / "s2.csv")]
    )
    assert again.exit_code == 0 and (tmp_path / "s2.csv").read_bytes() == (tmp_path / "s.csv").read_bytes()


def test_annotations_are_tabulated_and_bad_categories_named(tmp_path: Path) -> None:
    from culturebench.datasets.borsch.corpus_analyses import tabulate_annotations
    from culturebench.errors import SourceError

    path = tmp_path / "uk.csv"
    path.write_text(
        "id,language,category\n1,uk,Scraping Errors\n2,uk,scraping errors\n3,uk,Misc\n4,uk,Word Polysemy\n",
        encoding="utf-8",
    )
    table = tabulate_annotations([path])
    assert table["uk"]["n"] == 4 and table["uk"]["Scraping Errors"] == 0.5 and table["uk"]["Misc."] == 0.25
    path.write_text("id,language,category\n1,uk,Spam\n", encoding="utf-8")
    with pytest.raises(SourceError, match=r"uk\.csv, row 2, field 'category'"):
        tabulate_annotations([path])


def test_caption_share_from_a_laion_style_count(borsch_release, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from culturebench.datasets.borsch.corpus_analyses import caption_share
    from culturebench.eval.corpus.job import corpus_count
    from culturebench.eval.dataset_ref import load_rows, resolve_dataset

    rows = load_rows(
        resolve_dataset("borsch", revision=None, local=str(borsch_release.folder), repo=None),
        "parallel",
        "test",
        None,
    )
    captions = [f"{rows[k]['name_ru'].capitalize()} на тарелке" for k in range(4)] + ["кот на диване"] * 6
    (tmp_path / "laion").mkdir()
    pq.write_table(
        pa.table({"URL": ["u"] * len(captions), "TEXT": captions}), tmp_path / "laion" / "part-0.parquet"
    )
    corpus_count("borsch", str(tmp_path / "laion"), tmp_path / "count", lang="ru", column="TEXT",
                 local=str(borsch_release.folder))  # fmt: skip
    share = caption_share(tmp_path / "count")
    named = {rows[k]["id"] for k in range(4)}
    same_name = {r["id"] for r in rows if r["name_ru"] == r["name_uk"]}
    assert share["n_dishes"] == len(rows)
    assert share["share_ru_name"] == pytest.approx(len(named) / len(rows))
    assert share["share_any_name"] >= share["share_ru_name"]
    assert share["share_uk_name"] == pytest.approx(len(named & same_name) / len(rows))


# ---------------------------------------------------------------------- a real Dask cluster
def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    """Stop a process we started, and its children, by its PID (its own process group)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)


def test_the_same_job_on_a_local_dask_cluster_gives_identical_counts(tmp_path: Path) -> None:
    import urllib.request

    _write_corpus(tmp_path / "corpus")
    local = _count(tmp_path, "local")
    port, dashboard = _free_port(), _free_port()
    dask_cli = str(Path(sys.executable).with_name("dask"))
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    scheduler = subprocess.Popen(
        [dask_cli, "scheduler", "--host", "127.0.0.1", "--port", str(port),
         "--dashboard-address", f"127.0.0.1:{dashboard}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env,
    )  # fmt: skip
    worker = None
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{dashboard}/health", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "scheduler did not start"
                time.sleep(0.3)
        worker = subprocess.Popen(
            [dask_cli, "worker", f"tcp://127.0.0.1:{port}", "--nworkers", "2", "--nthreads", "1",
             "--host", "127.0.0.1", "--no-dashboard"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env,
        )  # fmt: skip
        from distributed import Client

        with Client(f"tcp://127.0.0.1:{port}", timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        on_cluster = _count(tmp_path, "cluster", scheduler=f"tcp://127.0.0.1:{port}")
    finally:
        if worker is not None:
            _stop(worker)
        _stop(scheduler)
    assert on_cluster == local
    assert scheduler.poll() is not None and worker.poll() is not None


def test_a_hub_corpus_at_a_pinned_revision_over_http(borsch_release, tmp_path: Path, servers) -> None:
    """`hub:REPO@REV:GLOB` lists the repo at its commit and reads the shards through hf://, from
    a local Hub-compatible server (olah); the counts equal those of the same files on disk."""
    import shutil

    corpus = _write_corpus(tmp_path / "corpus")
    (corpus / "c.parquet").unlink()
    local = tmp_path / "local"
    args = ["--lang", "uk", "--local", str(borsch_release.folder)]
    assert (
        CliRunner()
        .invoke(app, ["corpus", "count", "borsch", "--corpus", str(corpus), *args, "--out", str(local)])
        .exit_code
        == 0
    )
    with servers.local_hub(tmp_path / "hub") as hub:
        repo = hub.repo_path("org/corpus")
        shutil.copytree(corpus, repo / "uk")
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
        subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "corpus"],
            cwd=repo,
            check=True,
        )
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.strip()
        env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp_path / "hf")}
        proc = subprocess.run(
            [sys.executable, "-m", "culturebench.cli", "corpus", "count", "borsch", "--corpus",
             "hub:org/corpus@main:uk/*.jsonl.*", *args, "--out", str(tmp_path / "remote")],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads((tmp_path / "remote" / "count.json").read_text(encoding="utf-8"))
    assert [s["revision"] for s in record["shards"]] == [sha, sha]
    assert all(s["url"].startswith(f"hf://datasets/org/corpus@{sha}/uk/") for s in record["shards"])
    remote, here = _tables(tmp_path / "remote"), _tables(local)
    for name in ("mentions", "cooccurrence", "dishes"):
        assert remote[name] == here[name], name
    # the sample's priorities hash the shard fingerprint (a git blob id there, a sha256 here):
    # another draw of the same kind, at most per_dish per dish
    assert len(remote["incorrect_samples"]) == len(here["incorrect_samples"])


@pytest.mark.e2e
def test_image_contamination_at_scale_equals_the_validation_check(
    borsch_image_release, tmp_path: Path
) -> None:
    """Reference pHash shards streamed one engine task per shard (1 and 2 processes) find
    exactly what the release validation's streaming check finds, with the planted near-copies."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from culturebench.eval.corpus.contamination import corpus_contamination, release_hashes
    from culturebench.images.phash import to_array
    from culturebench.validation.images import stream_reference_matches

    records = release_hashes(borsch_image_release.folder)
    release = to_array([r["phash"] for r in records])
    rng = np.random.default_rng(3)
    folder = tmp_path / "refs"
    folder.mkdir()
    for s in range(3):
        ref = rng.integers(0, 2**64 - 1, size=5_000, dtype=np.uint64, endpoint=True)
        for k in range(4):  # near-copies of release images: 2, 5, 10 and 12 bits away
            value = release[(s * 4 + k) * 3 % len(release)]
            for b in rng.choice(64, size=(2, 5, 10, 12)[k], replace=False):
                value ^= np.uint64(1 << int(b))
            ref[k * 999] = value
        table = pa.table(
            {"phash": [f"{int(v):016x}" for v in ref], "source": [f"web/{s}/{i}" for i in range(len(ref))]}
        )
        pq.write_table(table, folder / f"part-{s}.parquet", row_group_size=2_000)
    expected = stream_reference_matches(release, folder, 10)
    for workers in (1, 2):
        out = tmp_path / f"out{workers}"
        record = corpus_contamination("borsch", str(folder), out, threshold=10,
                                      local=str(borsch_image_release.folder), workers=workers)  # fmt: skip
        found = pq.read_table(out / "contamination.parquet").to_pylist()
        assert sorted((r["phash"], r["reference_phash"], r["source"]) for r in found) == sorted(
            (records[a]["phash"], h, src) for a, h, src in expected
        )
        assert record["matches"] == len(found) >= 9 and all(r["distance"] <= 10 for r in found)
        assert {r["source"] for r in found} >= {f"web/{s}/{k * 999}" for s in range(3) for k in range(3)}


def test_documents_scanned_together_keep_their_own_positions() -> None:
    from culturebench.eval.corpus.matcher import Matcher, dish_terms

    matcher = Matcher(dish_terms([("soup", "ru", "КУРИНЫЙ СУП"), ("borsch", "ru", "БОРЩ")]))
    docs = ["Вкусный куриный", "суп и борщ", "", "Борщом (и куриным супом)"]
    found = matcher.find_many(docs)
    assert found == [matcher.find(d) for d in docs]
    assert found[0] == [] and [h.key[1] for h in found[1]] == ["borsch"]  # no match across documents
    assert [docs[3][h.start : h.end] for h in found[3]] == ["Борщом", "куриным супом"]


def test_names_match_in_lower_title_and_upper_case_and_with_yo() -> None:
    from culturebench.eval.corpus.matcher import Matcher, dish_terms

    matcher = Matcher(dish_terms([("soup", "ru", "КУРИНЫЙ СУП"), ("cake", "ru", "ЁЖИК")]))
    text = "БОРЩ? Нет: КУРИНЫЙ Суп, Куриного супа, куриный СУП; Ёжики и ежик. кУРИНЫЙ суп"
    found = [(h.key[1], text[h.start : h.end]) for h in matcher.find(text)]
    assert found == [
        ("soup", "КУРИНЫЙ Суп"),
        ("soup", "Куриного супа"),
        ("soup", "куриный СУП"),
        ("cake", "Ёжики"),
        ("cake", "ежик"),
    ]  # mixed case in a first word ("кУРИНЫЙ") is not matched


def test_boundaries_apostrophes_and_positions_at_the_byte_level(monkeypatch) -> None:
    """The scan runs over UTF-8 bytes: multi-byte boundaries («, —, …, no-break space) start a
    name, a typographic apostrophe matches ', a NUL inside a document keeps every position,
    a long multi-word name is checked in full, and the NFA gives what the DFA gives."""
    from culturebench.eval.corpus import matcher as m

    terms = m.dish_terms(
        [("meat", "uk", "М'ЯСО ПО-ФРАНЦУЗЬКИ"), ("borsch", "uk", "БОРЩ"), ("salad", "uk", "САЛАТ ОЛІВ'Є")]
    )
    docs = [
        "«Борщ»—борщем…борщу\xa0борщі, заборщ і борщевик.",
        "М’ясо по-французьки; м'ясо   по французькому; М`ЯСО ПО-ФРАНЦУЗЬКИ!",
        "до\x00 борщ, салатом олів’є",
        "Ёжик і салат олівʼє.",
    ]
    want = [
        ["Борщ", "борщем", "борщу", "борщі"],  # the guillemet is the boundary, not the match
        ["М’ясо по-французьки", "м'ясо   по французькому", "М`ЯСО ПО-ФРАНЦУЗЬКИ"],
        ["борщ", "салатом олів’є"],
        ["салат олівʼє"],
    ]
    matcher = m.Matcher(terms)
    got = [[d[h.start : h.end] for h in hits] for d, hits in zip(docs, matcher.find_many(docs), strict=True)]
    assert got == want
    monkeypatch.setattr(m, "DFA_MAX_KEYS", 0)  # the slower automaton for very many names
    assert m.Matcher(terms).find_many(docs) == matcher.find_many(docs)


def test_matcher_offsets_in_one_long_multibyte_document() -> None:
    """One long document with thousands of hits (Cyrillic, ё, apostrophes, 4-byte emoji, non-ASCII
    boundaries): every hit's character offsets are those of a slow reference (the same text in
    short documents, shifted), and the planted names are found where they were put."""
    import random

    from culturebench.eval.corpus.matcher import Matcher, country_terms, dish_terms

    matcher = Matcher(dish_terms(DISHES) + country_terms("uk"))
    rng = random.Random(7)
    fillers = ["ще", "м’ясо", "ёлка", "🍲", "смачно", "«так»", "дуже\xa0добре", "п'ять", "Ёж", "—", "…"]
    forms = ["борщ", "Борщу", "БОРЩЕМ", "пельменями", "Вареники", "Україні", "Польщі", "Грузія"]
    pieces, planted, at = [], [], 0
    for _ in range(3000):
        words = [rng.choice(fillers) for _ in range(rng.randint(0, 6))]
        head = (" ".join(words) + " ") if words else ""
        form = rng.choice(forms)
        piece = f"{head}{form}{rng.choice(['.', ',', '!', ' —', '»'])} "
        planted.append((at + len(head), at + len(head) + len(form)))
        pieces.append(piece)
        at += len(piece)
    text = "".join(pieces)
    assert len(text.encode("utf-8")) > 1.5 * len(text)  # mostly multi-byte characters
    hits = matcher.find(text)
    assert len(hits) >= 3000
    # slow reference: each piece on its own (short documents), offsets shifted by the pieces before
    reference, shift = [], 0
    for piece, found in zip(pieces, matcher.find_many(pieces), strict=True):
        reference.extend((h.key, h.start + shift, h.end + shift) for h in found)
        shift += len(piece)
    assert sorted((h.key, h.start, h.end) for h in hits) == sorted(reference)
    spans = {(h.start, h.end) for h in hits}
    assert all(span in spans for span in planted)
    for h in hits:  # each span is the name's own text
        heads = {"бор", "пел", "вар", "укр", "пол", "гру"}
        assert text[h.start : h.end].lower().replace("ё", "е")[:3] in heads


def test_cli_full_hash_fingerprints_every_byte(borsch_release, borsch_corpus, tmp_path: Path) -> None:
    """`corpus count --full-hash`: each local shard is named by the sha256 of all its bytes,
    and the counts are the same as with sampled fingerprints."""
    corpus, _ = borsch_corpus
    records = {}
    for name, extra in (("sampled", []), ("full", ["--full-hash"])):
        out = tmp_path / name
        result = CliRunner().invoke(
            app,
            ["corpus", "count", "borsch", "--corpus", str(corpus), "--lang", "uk",
             "--local", str(borsch_release.folder), "--out", str(out), *extra],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        records[name] = json.loads((out / "count.json").read_text(encoding="utf-8"))
    import hashlib

    assert len(records["full"]["shards"]) == 3
    for shard in records["full"]["shards"]:
        data = Path(shard["url"].removeprefix("file://")).read_bytes()
        assert shard["fingerprint"] == hashlib.sha256(data).hexdigest()
    assert records["full"]["documents"] == records["sampled"]["documents"] == 300
    assert records["full"]["characters"] == records["sampled"]["characters"]


def test_local_fingerprints_sampled_or_full(tmp_path: Path) -> None:
    """A local shard's fingerprint reads blocks of it, not all of it; it changes with a byte in
    a block, the size or the modification time; ``full_hash`` is the file's sha256."""
    import hashlib

    from culturebench.eval.corpus import shards

    path = tmp_path / "big.jsonl"
    data = bytearray(os.urandom(5 << 20))
    path.write_bytes(bytes(data))
    os.utime(path, ns=(1, 10**18))
    first = shards.list_shards(str(path))[0].fingerprint
    assert first.startswith("sampled:") and len(first) == 8 + 64
    assert shards.list_shards(str(path))[0].fingerprint == first
    assert shards.list_shards(str(path), full_hash=True)[0].fingerprint == hashlib.sha256(data).hexdigest()
    data[-1] ^= 1  # in the last block, same size and time
    path.write_bytes(bytes(data))
    os.utime(path, ns=(1, 10**18))
    assert shards.list_shards(str(path))[0].fingerprint != first
    os.utime(path, ns=(1, 10**18 + 1))
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    os.utime(path, ns=(1, 10**18 + 1))
    assert shards.list_shards(str(path))[0].fingerprint != first  # the time alone
    small = tmp_path / "small.jsonl"
    small.write_bytes(b'{"text": "x"}\n')
    assert shards.list_shards(str(small))[0].fingerprint.startswith("sampled:")


def test_line_blocks_give_the_lines_of_the_file() -> None:
    """Blocks of whole lines from reads that cut lines anywhere: the lines a line-by-line read
    gives, blank ones and a last line without its newline included."""
    import io

    from culturebench.eval.corpus import shards

    for data in (b"", b"a\n", b"a\nb", b"\n\n\n", b"a\r\n\nbb\nccc\n" * 50, "ж\nё".encode() * 300):

        class Small(io.BytesIO):
            def read1(self, size: int = -1) -> bytes:
                return super().read1(7)

        got = [line for block in shards._line_blocks(Small(data)) for line in block.split(b"\n")]
        assert got == [line.removesuffix(b"\n") for line in io.BytesIO(data)]


def test_read_ahead_keeps_order_raises_in_place_and_stops_its_thread() -> None:
    """Blocks read by a background thread come in order; an error raised while reading comes
    after the blocks read before it (so the error still names the line reached); a reader
    closed early (an error in matching, Ctrl-C) stops the thread."""
    import threading

    from culturebench.eval.corpus import shards

    def blocks(n: int, fail: bool):
        yield from range(n)
        if fail:
            raise EOFError("cut short")

    for depth in (2, 0):  # 0: in the caller's thread
        assert list(shards._read_ahead(blocks(50, False), depth=depth)) == list(range(50))
        got: list[int] = []
        with pytest.raises(EOFError, match="cut short"):
            for item in shards._read_ahead(blocks(7, True), depth=depth):
                got.append(item)
        assert got == list(range(7))

    def endless():
        n = 0
        while True:
            yield n
            n += 1

    ahead = shards._read_ahead(endless(), depth=2)
    assert [next(ahead) for _ in range(3)] == [0, 1, 2]
    ahead.close()
    assert not [t for t in threading.enumerate() if t.name == "culturebench-read-ahead"]


def _messy_documents(seed: int, count: int) -> list[str]:
    """Documents built to hit every edge of the rule: names in every case and inflection, with
    ё, every apostrophe, every boundary (one- and multi-byte), glued to letters, digits and
    underscores, inside longer words, across a NUL, with emoji, lone surrogates and Greek."""
    import random

    from culturebench.eval.corpus.matcher import BOUNDARIES

    rng = random.Random(seed)
    names = [
        *("борщ", "Борщу", "БОРЩЕМ", "борщевик", "заборщ", "пельменями", "ПЕЛЬМЕНІ", "Вареники"),
        *("м'ясо по-французьки", "М’ЯСО ПО ФРАНЦУЗЬКИ", "мʼясо", "салат олів`є", "Ёжик", "ёжики"),
        *("Україні", "УКРАЇНА", "Польщі", "грузія", "кУРИНЫЙ суп", "куриный суп", "Куриного   супа"),
    ]
    glue = [*BOUNDARIES, "", "_", "1", "x", "ω", "\x00", "\ud800", "🍲", "\u0301", "'", "’"]
    out = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(0, 12)):
            parts.append(rng.choice(glue) + rng.choice(names) + rng.choice(glue))
            parts.append(rng.choice([" ", "", "\n", " — ", "«", "»"]))
        out.append("".join(parts))
    return out


def test_both_automata_give_the_same_hits(monkeypatch) -> None:
    """The daachorse automaton (every boundary in the keys) and the ahocorasick-rs one (over
    translated text) find the same hits, in the same order, on documents made to hit every
    edge of the rule, one at a time and many at once."""
    pytest.importorskip("daachorse")
    from culturebench.eval.corpus import matcher as m

    more = [("meat", "uk", "М'ЯСО ПО-ФРАНЦУЗЬКИ"), ("soup", "ru", "КУРИНЫЙ СУП"), ("cake", "ru", "ЁЖИК")]
    terms = m.dish_terms([*DISHES, *more, ("salad", "uk", "САЛАТ ОЛІВ'Є")]) + m.country_terms("uk")
    docs = _messy_documents(3, 400)
    fast = m.Matcher(terms)
    found = fast.find_many(docs)
    assert fast.boundary_automaton() is not None and sum(map(len, found)) > 500
    monkeypatch.setattr(m, "USE_BOUNDARY_KEYS", False)
    slow = m.Matcher(terms)
    assert slow.find_many(docs) == found
    assert [slow.find(d) for d in docs[:50]] == found[:50]


def _as_json_literals(docs: list[str], seed: int) -> list[bytes]:
    """Each document as a JSON string literal, some with ``/`` written ``\\/`` (as some
    writers do), as a JSON Lines file holds it."""
    import random

    rng = random.Random(seed)
    out = []
    for doc in docs:
        literal = json.dumps(doc, ensure_ascii=False)
        out.append((literal.replace("/", "\\/") if rng.random() < 0.5 else literal).encode())
    return out


def test_documents_scanned_as_json_literals_give_the_hits_of_their_text(monkeypatch) -> None:
    """Documents scanned as the JSON string literals of the file (escapes and all, no str made)
    give the hits, offsets and characters of their decoded text, on documents made to hit every
    edge of the rule plus JSON's escapes: newlines, tabs and quotes as boundaries, backslashes
    before a name or an n, long runs of escapes between a name's words; a literal with a \\u
    escape is left to the text path."""
    pytest.importorskip("daachorse")
    from culturebench.eval.corpus import matcher as m
    from culturebench.eval.corpus.json_texts import JsonTexts

    more = [("soup", "ru", "КУРИНЫЙ СУП"), ("cake", "ru", "ЁЖИК"), ("salad", "uk", "САЛАТ ОЛІВ'Є")]
    terms = m.dish_terms([*DISHES, *more]) + m.country_terms("uk")
    fast = m.Matcher(terms)
    escapes = ["\\", "\\n", "\\\\", "\\\n", "\b", "\f", '\\"', "\t\t", "\n" * 40, '"']
    import random

    rng = random.Random(5)
    docs = []
    for doc in _messy_documents(7, 600):
        doc = doc.replace("\x00", "").replace("\ud800", "")
        for _ in range(rng.randint(0, 6)):
            at = rng.randrange(len(doc) + 1)
            doc = doc[:at] + rng.choice(escapes) + doc[at:]
        docs.append(doc)
    docs += ["куриный" + "\n" * n + "суп" for n in (60, 75, 200)] + [""]  # cut where the text cuts
    literals = _as_json_literals(docs, 1)
    scanned = hits = 0
    for start in range(0, len(docs), 25):
        chunk, texts = docs[start : start + 25], JsonTexts.of(literals[start : start + 25])
        assert texts is not None and list(texts) == chunk
        assert texts.chars == sum(map(len, chunk))
        found = fast.find_many(texts)
        assert found == fast.find_many(chunk), start
        scanned += len(chunk)
        hits += sum(map(len, found))
    assert scanned == len(docs) and hits > 1000
    assert JsonTexts.of([b'"\\u0431\\u043e"']) is None and JsonTexts.of([b"5"]) is None
    assert JsonTexts.of(_as_json_literals(["борщ\\u0431"], 0)) is None  # a backslash, then u: text path
    assert list(JsonTexts.of([b"null", b'"a"'])) == ["", "a"]  # type: ignore[arg-type]
    monkeypatch.setattr(m, "USE_BOUNDARY_KEYS", False)  # without daachorse: decoded and read as text
    assert m.Matcher(terms).find_many(JsonTexts.of(literals[:25])) == fast.find_many(docs[:25])


def test_a_count_of_json_literals_equals_the_count_of_their_text(tmp_path: Path, monkeypatch) -> None:
    """A whole shard count (documents, characters, mentions, co-occurrence, the samples'
    sentences) is the same when JSON Lines are scanned as written and when every block is
    decoded to text: paragraphs, quotes, backslashes, nulls, CRLF lines, and a block of \\u
    escapes (ensure_ascii) between blocks scanned as written."""
    pytest.importorskip("daachorse")
    import random

    from culturebench.eval.corpus import count as cnt
    from culturebench.eval.corpus import shards as sh

    rng = random.Random(11)
    docs = [d.replace("\x00", "").replace("\ud800", "") for d in _messy_documents(13, 3000)]
    docs = [d + rng.choice(["", " в Україні", "\n\nПольщі «борщ»", ' \\"Грузії\\"']) for d in docs]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    lines = [json.dumps({"url": "u", "text": d}, ensure_ascii=False) for d in docs]
    lines[5] = '{"url": "u", "text": null}'
    with gzip.open(corpus / "a.jsonl.gz", "wt", encoding="utf-8", newline="") as handle:
        handle.write("\r\n".join(lines[:1500]) + "\r\n")
    escaped = [json.dumps({"text": d}) for d in docs[1500:1800]]  # \u escapes: the text path
    body = lines[1500:] * 6 + escaped + lines[1500:] * 6  # > 1 MB: blocks of both kinds
    (corpus / "b.jsonl").write_text("\n".join(body) + "\n", encoding="utf-8")
    shards = sh.list_shards(str(corpus))
    kinds = {type(b).__name__ for s in shards for b in sh.iter_texts(s, "text", literals=True)}
    assert kinds == {"JsonTexts", "list"}

    def parts(name: str) -> list[dict]:
        folder = tmp_path / name
        return [json.loads(Path(cnt.count_shard(s, _spec(), str(folder))).read_text()) for s in shards]

    scanned = parts("literals")
    monkeypatch.setattr(sh, "_literal_block", lambda *args: None)
    assert parts("text") == scanned
    assert sum(p["documents"] for p in scanned) == 1500 + len(body)
    assert sum(len(p["mentions"]) for p in scanned) > 5 and any(p["samples"] for p in scanned)


def test_the_double_array_is_kept_on_disk_and_a_damaged_copy_is_rebuilt(tmp_path: Path, monkeypatch) -> None:
    """The automaton is stored under the cache, keyed by its keys (the same file from every
    process: the keys come in one order), loaded next time, and built again when the stored
    copy is damaged; the hits never change."""
    pytest.importorskip("daachorse")
    from culturebench.eval.corpus import matcher as m

    monkeypatch.setenv("CULTUREBENCH_CACHE", str(tmp_path))
    terms = m.dish_terms(DISHES) + m.country_terms("uk")
    text = "Борщ і пельмені з Україні, ВАРЕНИКИ й борщем"
    first = m.Matcher(terms).find(text)
    (stored,) = (tmp_path / "corpus-automaton").glob("*.daac")
    assert m.Matcher(terms).find(text) == first and len(first) == 9
    # another process, whose str hashes differ (sets iterate in another order), finds that file
    script = (
        "from culturebench.eval.corpus import matcher as m; "
        f"print(len(m.Matcher(m.dish_terms({DISHES!r}) + m.country_terms('uk')).find({text!r})))"
    )
    env = {**os.environ, "CULTUREBENCH_CACHE": str(tmp_path), "PYTHONHASHSEED": "12345"}
    other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert other.returncode == 0 and other.stdout.strip() == "9", other.stderr
    assert [p.name for p in (tmp_path / "corpus-automaton").iterdir()] == [stored.name]
    data = bytearray(stored.read_bytes())
    data[len(data) // 2] ^= 0xFF
    stored.write_bytes(bytes(data))
    assert m.Matcher(terms).find(text) == first  # damaged: built again, and stored again
    assert stored.read_bytes() != bytes(data)


def test_json_lines_read_in_blocks_give_the_lines_values(tmp_path: Path, monkeypatch) -> None:
    """JSON Lines blocks decoded in one call (msgspec) give the values the line-by-line reader
    gives: nulls, blank and CRLF lines, escapes, a byte-order mark, other fields; and a bad line
    after good blocks is still named by its number."""
    import gzip

    pytest.importorskip("msgspec")
    from culturebench.eval.corpus import shards as sh

    lines = [
        '{"text": "перший\\nрядок", "url": "a"}',
        "",
        '{"text": null}',
        "   ",
        '{"url": 1, "text": "\\u0431\\u043e\\u0440\\u0449"}',
    ]
    body = "\ufeff" + "\r\n".join(lines * 3000) + "\n"
    path = tmp_path / "a.json.gz"
    path.write_bytes(gzip.compress(body.encode("utf-8")))
    (shard,) = sh.list_shards(str(tmp_path))
    fast = [t for batch in sh.iter_texts(shard, "text") for t in batch]
    monkeypatch.setattr(sh, "_block_decoder", lambda column: None)
    slow = [t for batch in sh.iter_texts(shard, "text") for t in batch]
    assert fast == slow and len(fast) == 9000 and "борщ" in fast and "перший\nрядок" in fast
    monkeypatch.undo()
    bad = tmp_path / "bad"
    bad.mkdir()
    good = '{"text": "' + "слово " * 300 + '"}\n'
    (bad / "b.jsonl").write_text(good * 5000 + '{"text": 5}\n', encoding="utf-8")
    (shard,) = sh.list_shards(str(bad))
    with pytest.raises(sh.CorpusError, match=r"b.jsonl, line 5001: field 'text' is a JSON number"):
        for _ in sh.iter_texts(shard, "text"):
            pass
    # as JSON literals: the blocks that qualify come unmade, the rest as text, in file order
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    plain = '{"text": "борщ\\n\\"слово\\" ' + "слово " * 200 + '", "url": "x"}\n'
    (mixed / "m.jsonl").write_text(plain * 4000 + lines[4] + "\n" + plain * 4000, encoding="utf-8")
    (shard,) = sh.list_shards(str(mixed))
    kinds = [type(batch).__name__ for batch in sh.iter_texts(shard, "text", literals=True)]
    assert "JsonTexts" in kinds and "list" in kinds
    as_literals = [t for batch in sh.iter_texts(shard, "text", literals=True) for t in batch]
    assert as_literals == [t for batch in sh.iter_texts(shard, "text") for t in batch]
    assert len(as_literals) == 8001 and as_literals[0].startswith('борщ\n"слово" ')
    (shard,) = sh.list_shards(str(bad))
    with pytest.raises(sh.CorpusError, match=r"b.jsonl, line 5001: field 'text' is a JSON number"):
        for _ in sh.iter_texts(shard, "text", literals=True):
            pass
    (bad / "b.jsonl").write_bytes(good.encode() * 3000 + b'{"text": "\xd0"}\n' + good.encode())
    (shard,) = sh.list_shards(str(bad))
    with pytest.raises(sh.CorpusError, match=r"b.jsonl, line 3001: not UTF-8 text \(byte 0xd0"):
        for _ in sh.iter_texts(shard, "text", literals=True):
            pass
