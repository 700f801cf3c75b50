"""`culturebench eval paper borsch`: Table 4 (App. J.4) from `description-correlations` runs of
the real §5 pipeline beside the transcribed numbers, §5's reference frame in Figure 8, and
Fig. 2a from a `corpus count`."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path
from statistics import median

import pytest

from culturebench.eval.paper_report import build_report
from culturebench.eval.runner import run_eval

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("one_torch_thread")]

LLAMA = "meta-llama/Llama-3.1-70B-Instruct"  # the paper's Llama-3.1, by the `models:` aliases
LLAMA_VISION = "meta-llama/Llama-3.2-90B-Vision-Instruct"  # the paper's Llama-3.2-Vision
N_DISHES = 8
ANSWERS = ("Украина (Україна)", "Россия (Росія)", "Польша (Польща)", "Грузия (Грузія)")


def _answer(prompt: str) -> str:
    """A country that varies with the prompt (so per-dish Jaccard varies), in both languages."""
    return ANSWERS[zlib.crc32(prompt.encode("utf-8")) % len(ANSWERS)]


def _item(report: dict, ref: str) -> dict:
    return next(i for i in report["items"] if i["ref"] == ref)


def _row(item: dict, label: str) -> dict:
    return next(r for r in item["rows"] if r["label"] == label)


def _metrics(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text(encoding="utf-8"))["metrics"]


@pytest.fixture(scope="module")
def section5(borsch_image_release, scripted_backend, tiny_sd: Path, tiny_dinov2: Path, tmp_path_factory):
    """The §5 pipeline (descriptions by a scripted "Llama-3.1", images by a tiny diffusion
    model, scores by a tiny DINOv2 saved as `dinov2-giant`) with origin-qa / origin-vqa runs of
    the Llama family, correlated by the real `description-correlations` stage."""
    import torch

    from culturebench.datasets.borsch.pipeline import PipelineSpec, run_pipeline
    from culturebench.eval.backends import ImageParams, make_backend

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("table4")
    local = str(borsch_image_release.folder)
    run_eval("borsch", "origin-qa", scripted_backend(_answer, model=LLAMA), root / "qa", local=local,
             limit=N_DISHES)  # fmt: skip
    run_eval("borsch", "origin-vqa", scripted_backend(_answer, model=LLAMA_VISION), root / "vqa", local=local,
             limit=N_DISHES)  # fmt: skip
    giant = shutil.copytree(tiny_dinov2, root / "dinov2-giant")  # named as the paper's encoder
    spec = PipelineSpec(
        out=root / "pipe",
        local=local,
        limit=N_DISHES,
        describer=lambda: scripted_backend(lambda p: f"A round dish, {len(p)} layers.", model=LLAMA),
        translator=None,
        t2i=lambda: make_backend(
            "diffusers", str(tiny_sd), sampling=ImageParams(width=64, height=64, steps=2, seed=0)
        ),
        dinov2=str(giant),
        qa=str(root / "qa"),
        vqa=str(root / "vqa"),
    )
    run_pipeline(spec)
    return {"root": root, "local": local, "pipe": root / "pipe", "tiny_dinov2": tiny_dinov2}


def test_table4_rows_beside_the_transcribed_numbers(section5) -> None:
    """A run of Llama descriptions with Llama-3.1 QA and Llama-3.2-Vision VQA fills the paper's
    "Llama-3.2" column: every row is the run's correlation beside the printed cell."""
    folder = section5["pipe"] / "5-correlations"
    metrics = _metrics(folder)
    report = build_report("borsch", [folder], section5["root"] / "r", local=section5["local"])
    t4 = _item(report, "Table 4")
    # a tiny model's correlations beside the print: compared, and not equal to it
    assert t4["status"].startswith("computed, differs by") and t4["cells_compared"] == 35
    qa = metrics["vs_qa"]["ru"]["jaccard"]
    row = _row(t4, "Llama-3.2 ru: QA Jaccard r")
    assert qa["pearson"] is not None and row["ours"] == pytest.approx(qa["pearson"])
    assert row["paper"] == 0.08 and row["n"] == qa["n"] == N_DISHES
    vqa = metrics["vs_vqa"]["uk"]["overlap"]
    row = _row(t4, "Llama-3.2 uk: VQA Overlap tau")
    assert vqa["kendall"] is not None and row["ours"] == pytest.approx(vqa["kendall"])
    assert row["paper"] == 0.12
    assert _row(t4, "Llama-3.2 ru: QA Dice r")["paper"] == 0.11  # "011" in the extraction
    assert _row(t4, "Llama-3.2 uk: VQA Jaccard rho")["paper"] == 0.12
    unread = _row(t4, "Llama-3.2 uk: QA Dice r")
    assert unread["paper"] is None and "'0.5'" in unread["note"] and unread["ours"] is not None
    # 2 tasks x 3 metrics x 3 statistics x 2 languages of one family, 35 of them compared
    assert len(t4["rows"]) == 36 and sum(r["paper"] is not None for r in t4["rows"]) == 35
    # the Qwen2 column has no run: said, the Llama one is not
    assert any(m.startswith("Qwen2 QA") for m in t4["missing"]) and any(
        m.startswith("Qwen2 VQA") for m in t4["missing"]
    )
    assert not any(m.startswith("Llama-3.2") for m in t4["missing"])
    paper = {c["label"]: c for c in t4["table"]["columns"] if c["source"] == "paper"}
    assert set(paper) == {"Llama-3.2", "Qwen2"}
    assert sum(v is not None for c in paper.values() for v in c["cells"].values()) == 71
    assert paper["Qwen2"]["cells"]["uk: QA Overlap rho"] == 0.23
    markdown = (section5["root"] / "r" / "paper_report.md").read_text(encoding="utf-8")
    assert "| Llama-3.2 ru: QA Jaccard r |" in markdown


def test_table4_other_qa_model_is_not_compared(section5, scripted_backend) -> None:
    """QA by a model the paper does not name: the rows are ours alone, the note says why."""
    root, local = section5["root"], section5["local"]
    run_eval("borsch", "origin-qa", scripted_backend(_answer, model="my/own-model"), root / "qa-own",
             local=local, limit=N_DISHES)  # fmt: skip
    options = {"scores": str(section5["pipe"] / "4-scores"), "qa": str(root / "qa-own")}
    run_eval("borsch", "description-correlations", None, root / "corr-own", task_options=options)
    report = build_report("borsch", [root / "corr-own"], root / "r-own", local=local)
    t4 = _item(report, "Table 4")
    assert t4["status"] == "computed"
    row = _row(t4, "Llama-3.2 ru: QA Jaccard r")
    assert row["paper"] is None and "not the paper's Llama-3.1" in row["note"]
    assert row["ours"] == pytest.approx(_metrics(root / "corr-own")["vs_qa"]["ru"]["jaccard"]["pearson"])
    assert any(m.startswith("Llama-3.2 QA") for m in t4["missing"])


@pytest.mark.integration
def test_table4_without_runs_says_what_is_missing(borsch_release, tmp_path: Path) -> None:
    report = build_report("borsch", [], tmp_path / "r", local=str(borsch_release.folder))
    t4 = _item(report, "Table 4")
    assert t4["status"] == "missing inputs" and not t4["rows"]
    assert "`description-correlations` runs" in t4["missing"][0]
    assert _item(report, "Table 3")["status"] == "not reproducible"


def test_reference_frame_rows_in_figure_8(section5) -> None:
    """§5's frame (0.52 / 0.07 with DINOv2-giant) beside the run's, n = image pairs; a run with
    another encoder is not compared."""
    root, local, pipe = section5["root"], section5["local"], section5["pipe"]
    other = shutil.copytree(section5["tiny_dinov2"], root / "tiny-dino")
    options = {"source": str(pipe / "3-images"), "model": str(other)}
    run_eval("borsch", "description-scores", None, root / "scores-other", local=local, task_options=options)
    report = build_report("borsch", [pipe / "4-scores", root / "scores-other"], root / "r-frame", local=local)
    fig8 = _item(report, "Figure 8")
    frame = _metrics(pipe / "4-scores")["reference"]
    intra = _row(fig8, "reference frame (dinov2-giant): intra-dish mean cosine")
    inter = _row(fig8, "reference frame (dinov2-giant): inter-dish mean cosine")
    assert intra["ours"] == pytest.approx(frame["intra_dish"]) and intra["paper"] == 0.52
    assert intra["n"] == frame["pairs"]["intra_dish"] > 0
    assert inter["ours"] == pytest.approx(frame["inter_dish"]) and inter["paper"] == 0.07
    assert inter["n"] == frame["pairs"]["inter_dish"] > intra["n"]
    assert fig8["status"].startswith("computed, differs by") and fig8["cells_compared"] == 2
    not_giant = _row(fig8, "reference frame (tiny-dino): intra-dish mean cosine")
    assert not_giant["paper"] is None and "not compared" in not_giant["note"]


@pytest.mark.integration
def test_figure2a_from_a_corpus_count(borsch_release, tmp_path: Path) -> None:
    """Fig. 2a: occurrences of each Ukrainian dish in a written corpus and its frequency rank,
    Wikidata vs bootstrapped; medians and ranks recomputed here from the count's table."""
    import gzip

    import pyarrow.parquet as pq

    from culturebench.datasets.borsch.tasks import POST_SOVIET
    from culturebench.eval.corpus.job import corpus_count

    local = str(borsch_release.folder)
    rows = pq.read_table(next((borsch_release.folder / "data" / "uk").glob("*.parquet"))).to_pylist()
    wiki = [r for r in rows if r["provenance"] == "wikidata"][:60]  # of 415: the median stays 0
    boot = [r for r in rows if r["provenance"] != "wikidata"][:250]  # of 408: each written twice
    docs = [f"Смачна страва {r['name'].lower()} тут." for r in wiki + boot + boot]
    (tmp_path / "corpus").mkdir()
    with gzip.open(tmp_path / "corpus" / "uk-0.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in docs)
    corpus_count("borsch", str(tmp_path / "corpus"), tmp_path / "count", lang="uk", config="uk", local=local)
    report = build_report("borsch", [], tmp_path / "r", local=local, inputs={"corpus_uk": tmp_path / "count"})
    fig2 = _item(report, "Figure 2")
    mentions = pq.read_table(tmp_path / "count" / "mentions.parquet").to_pylist()
    occurrences = {m["dish_id"]: m["occurrences"] for m in mentions if m["name_lang"] == "uk"}
    assert len(occurrences) == len(rows) and all(occurrences[r["id"]] > 0 for r in wiki + boot)
    values = list(occurrences.values())  # rank 1 = most frequent, ties at their mean rank
    rank = {
        d: sum(v > n for v in values) + (sum(v == n for v in values) + 1) / 2 for d, n in occurrences.items()
    }
    for kind, members in (
        ("Wikidata", [r for r in rows if r["provenance"] == "wikidata"]),
        ("bootstrapped", [r for r in rows if r["provenance"] != "wikidata"]),
    ):
        label = f"(a) uk corpus (uk dishes), all {kind}"
        found = [occurrences[r["id"]] for r in members]
        row = _row(fig2, f"{label}: median occurrences")
        assert row["ours"] == median(found) and row["n"] == len(members)
        assert _row(fig2, f"{label}: median frequency rank")["ours"] == median(rank[r["id"]] for r in members)
        assert _row(fig2, f"{label}: never found (%)")["ours"] == pytest.approx(
            100 * found.count(0) / len(found)
        )
        ps = [r for r in members if set(r["origins"]) & set(POST_SOVIET)]
        row = _row(fig2, f"(a) uk corpus (uk dishes), post-Soviet {kind}: median occurrences")
        assert row["n"] == len(ps) and row["ours"] == median(occurrences[r["id"]] for r in ps)
    # by construction: most bootstrapped dishes are found (twice or more), most Wikidata ones not
    assert _row(fig2, "(a) uk corpus (uk dishes), all bootstrapped: median occurrences")["ours"] >= 2
    assert _row(fig2, "(a) uk corpus (uk dishes), all Wikidata: median occurrences")["ours"] == 0
    assert "figure2a_uk.png" in fig2["figures"] and (tmp_path / "r" / "figure2a_uk.png").is_file()
    assert _row(fig2, "uk, Wikidata: dishes with a post-Soviet origin")["paper"] == 81  # (b) still there
