"""BORSCH §5: descriptions -> translation -> images -> DINOv2 scores -> correlations, end to end
on tiny local models over a release with embedded images, plus the metrics by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from culturebench.cli import app

pytestmark = [pytest.mark.unit, pytest.mark.usefixtures("one_torch_thread")]


# ---------------------------------------------------------------------- by hand
@pytest.mark.parametrize(
    ("text", "names", "lang", "expected", "count"),
    [
        (
            "Борщ — это суп. Для борща нужна свёкла.",
            ["БОРЩ"],
            "ru",
            "блюдо — это суп. Для блюдо нужна свёкла.",
            2,
        ),
        ("Борщевик не едят.", ["БОРЩ"], "ru", "Борщевик не едят.", 0),  # another word, not an inflection
        (
            "Вареники з вишнями: варениками смакують",
            ["ВАРЕНИКИ"],
            "uk",
            "страва з вишнями: страва смакують",
            2,
        ),
        ("Чак-чак и чак-чака", ["ЧАК-ЧАК"], "ru", "блюдо и блюдо", 2),
        ("Плов", ["ПЛОВ", "ПЛОВ"], "uk", "страва", 1),
        ("Ничего общего", ["ХАЧАПУРИ"], "ru", "Ничего общего", 0),
    ],
)
def test_dish_names_are_redacted_with_inflections(text, names, lang, expected, count) -> None:
    from culturebench.datasets.borsch.description import redact

    assert redact(text, names, lang) == (expected, count)


def test_reference_frame_equals_brute_force() -> None:
    from culturebench.datasets.borsch.description import reference_frame

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(23, 8)) + 0.5
    dishes = [f"d{k % 6}" for k in range(22)] + ["lonely"]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    intra, inter = [], []
    for i in range(len(unit)):
        for j in range(i + 1, len(unit)):
            (intra if dishes[i] == dishes[j] else inter).append(float(unit[i] @ unit[j]))
    frame = reference_frame(vectors, dishes)
    assert frame["intra_dish"] == pytest.approx(np.mean(intra))
    assert frame["inter_dish"] == pytest.approx(np.mean(inter))
    assert frame["pairs"] == {"intra_dish": len(intra), "inter_dish": len(inter)}
    assert frame["n_dishes"] == 7 and frame["n_images"] == 23


def test_correlations_and_lins_ccc() -> None:
    from scipy import stats

    from culturebench.eval.correlation import correlations, lin_ccc

    x = [0.1, 0.4, 0.35, 0.8, 0.9]
    y = [0.2, 0.3, 0.5, 0.7, 1.0]  # ranks 1 2 3 4 5 against x: 1 3 2 4 5 (one swap)
    result = correlations(x, y, lin=True)
    assert result["n"] == 5
    assert result["pearson"] == pytest.approx(stats.pearsonr(x, y)[0])
    assert result["spearman"] == pytest.approx(0.9) and result["kendall"] == pytest.approx(0.8)
    # Lin by hand: 2 cov / (var x + var y + (mean x - mean y)^2), population moments
    mx, my = np.mean(x), np.mean(y)
    cov = np.mean((np.array(x) - mx) * (np.array(y) - my))
    assert result["lin_ccc"] == pytest.approx(2 * cov / (np.var(x) + np.var(y) + (mx - my) ** 2))
    assert lin_ccc(x, x) == pytest.approx(1.0)
    assert lin_ccc(x, [v + 0.5 for v in x]) < 0.5  # perfectly correlated, but not concordant
    assert correlations([1.0, 2.0], [2.0, 1.0])["pearson"] is None  # too few pairs
    assert correlations([1.0, 1.0, 1.0], [0.2, 0.5, 0.9])["spearman"] is None  # constant


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("dish_id,language\nx,ru\n", "ratings.csv, row 1, field 'rating'"),
        ("dish_id,language,rating\nx,ru,high\n", "ratings.csv, row 2, field 'rating'"),
        ("dish_id,language,rating\nx,ru,1.5\n", "outside [0, 1]"),
        ("dish_id,language,rating\nx,en,0.5\n", "field 'language'"),
        ("dish_id,language,rating\nx,ru,0.5\nx,ru,0.6\n", "duplicate rating"),
    ],
)
def test_human_ratings_errors_name_file_row_and_field(tmp_path: Path, content: str, message: str) -> None:
    from culturebench.datasets.borsch.description import read_human_ratings
    from culturebench.errors import SourceError

    path = tmp_path / "ratings.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SourceError) as caught:
        read_human_ratings(path)
    assert message in str(caught.value)


# ---------------------------------------------------------------------- end to end
def _pipeline(release, models, out: Path, *extra: str):
    llama, sd, dino = models
    return CliRunner().invoke(
        app,
        ["eval", "borsch-description", "--model", str(llama), "--t2i", str(sd), "--dinov2", str(dino),
         "--local", str(release), "--limit", "3", "--images-per-dish", "2", "--size", "64x64",
         "--max-new-tokens", "16", "--out", str(out), *extra],
    )  # fmt: skip


@pytest.fixture(scope="module")
def section5(borsch_image_release, tiny_model: Path, tiny_sd: Path, tiny_dinov2: Path, tmp_path_factory):
    """The pipeline once, with a QA run of the same tiny model and made-up human ratings."""
    import torch

    from culturebench.eval.backends import SamplingParams
    from culturebench.eval.backends.transformers_backend import TransformersBackend
    from culturebench.eval.runner import run_eval

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("section5")
    release = borsch_image_release.folder
    qa_backend = TransformersBackend(str(tiny_model), sampling=SamplingParams(max_new_tokens=8))
    run_eval("borsch", "origin-qa", qa_backend, root / "qa", local=str(release), limit=3)
    qa_rows = {
        json.loads(line)["row_id"] for line in (root / "qa" / "samples.jsonl").read_text().splitlines()
    }
    ratings = root / "ratings.csv"
    lines = ["dish_id,language,rating"] + [
        f"{dish},{lang},{(k % 4) / 3:.3f}"
        for k, (dish, lang) in enumerate((d, x) for d in sorted(qa_rows) for x in ("ru", "uk"))
    ]
    ratings.write_text("\n".join(lines) + "\n", encoding="utf-8")
    models = (tiny_model, tiny_sd, tiny_dinov2)
    out = root / "pipe"
    result = _pipeline(
        release, models, out, "--steps", "3", "--qa", str(root / "qa"), "--human", str(ratings)
    )
    assert result.exit_code == 0, result.output
    return {
        "release": release,
        "models": models,
        "out": out,
        "root": root,
        "extra": ["--qa", str(root / "qa"), "--human", str(ratings)],
    }


@pytest.mark.e2e
def test_pipeline_runs_every_stage_and_records_timings(section5) -> None:
    out = section5["out"]
    record = json.loads((out / "pipeline.json").read_text(encoding="utf-8"))
    stages = [s["stage"] for s in record["stages"]]
    assert stages == ["1-description", "2-translation", "3-images", "4-scores", "5-correlations"]
    assert all(s["seconds"] >= 0 and not s["rerun_because_changed"] for s in record["stages"])
    descriptions = [json.loads(x) for x in (out / "1-description" / "samples.jsonl").read_text().splitlines()]
    assert len(descriptions) == 6 and {d["lang"] for d in descriptions} == {"ru", "uk"}
    assert descriptions[0]["prompt"].startswith("Опишите блюдо ") and descriptions[1]["prompt"].startswith(
        "Опиши страву "
    )
    translation = json.loads((out / "2-translation" / "run.json").read_text(encoding="utf-8"))
    from culturebench.hashing import sha256_file

    # each stage pins the stage it read by the sha256 of its samples
    assert translation["task_options"]["source_sha256"] == sha256_file(
        out / "1-description" / "samples.jsonl"
    )
    images = json.loads((out / "3-images" / "run.json").read_text(encoding="utf-8"))
    assert images["task_options"]["source_sha256"] == sha256_file(out / "2-translation" / "samples.jsonl")
    assert images["seeds"] == [0, 1] and len(list((out / "3-images" / "images").iterdir())) == 12


@pytest.mark.e2e
def test_scores_match_a_hand_computation_and_the_reference_frame(section5) -> None:
    from culturebench.datasets.borsch.description import read_scores, reference_frame
    from culturebench.eval.dataset_ref import load_rows, resolve_dataset
    from culturebench.eval.embeddings import ImageEmbedder
    from culturebench.eval.tasks.base import row_images

    out, (_llama, _sd, dino) = section5["out"], section5["models"]
    rows = load_rows(
        resolve_dataset("borsch", revision=None, local=str(section5["release"]), repo=None),
        "parallel",
        "test",
        None,
    )
    embedder = ImageEmbedder(str(dino), cache=False)
    gt = {row["id"]: embedder.embed_images(list(row_images(row))) for row in rows if row_images(row)}
    results = json.loads((out / "4-scores" / "results.json").read_text(encoding="utf-8"))["metrics"]
    every = np.concatenate(list(gt.values()))
    frame = reference_frame(every, [d for d, v in gt.items() for _ in range(len(v))])
    assert results["reference"]["n_images"] == len(every) == frame["n_images"]
    assert results["reference"]["intra_dish"] == pytest.approx(frame["intra_dish"], abs=1e-5)
    samples = [json.loads(x) for x in (out / "3-images" / "samples.jsonl").read_text().splitlines()]
    sample = samples[0]
    scores = read_scores(out / "4-scores")
    mates = [s for s in samples if (s["row_id"], s["lang"]) == (sample["row_id"], sample["lang"])]
    by_hand = []
    for s in mates:
        v = embedder.embed_images([(out / "3-images" / s["output"]).read_bytes()])[0]
        g = gt[s["row_id"]]
        by_hand.append(float(np.mean(g @ v / np.linalg.norm(g, axis=1) / np.linalg.norm(v))))
    assert len(mates) == 2
    assert scores[(sample["row_id"], sample["lang"])]["score_mean"] == pytest.approx(
        np.mean(by_hand), abs=1e-5
    )
    assert (
        results["ru"]["n"] == 3
        and results["ru"]["score_mean"]["ci95"][0] <= results["ru"]["score_mean"]["mean"]
    )
    assert (out / "4-scores" / "description_scores.png").is_file()


@pytest.mark.e2e
def test_correlations_against_qa_and_human_ratings(section5) -> None:
    from scipy import stats

    from culturebench.datasets.borsch.description import qa_per_dish, read_human_ratings, read_scores

    out, root = section5["out"], section5["root"]
    metrics = json.loads((out / "5-correlations" / "results.json").read_text(encoding="utf-8"))["metrics"]
    scores = read_scores(out / "4-scores")
    _run, qa = qa_per_dish(root / "qa")
    keys = [k for k in scores if k[1] == "ru" and k in qa]
    x, y = [scores[k]["score_mean"] for k in keys], [qa[k]["jaccard"] for k in keys]
    ours = metrics["vs_qa"]["ru"]["jaccard"]
    assert ours["n"] == 3 and metrics["vs_qa"]["same_model_as_describer"] is True
    if ours["spearman"] is not None:
        assert ours["spearman"] == pytest.approx(stats.spearmanr(x, y)[0])
    ratings = read_human_ratings(root / "ratings.csv")
    assert metrics["vs_human"]["ru"]["n"] == 3 and set(metrics["vs_human"]["ru"]) >= {"pearson", "lin_ccc"}
    assert len(ratings) == 6
    report = (out / "5-correlations" / "report.md").read_text(encoding="utf-8")
    assert (
        "Table 4" in report and "Table 3" in report and (out / "5-correlations" / "scatter_qa.png").is_file()
    )


@pytest.mark.e2e
def test_killed_pipeline_resumes_to_identical_outputs(section5, tmp_path: Path) -> None:
    out = tmp_path / "pipe"
    shutil.copytree(section5["out"], out)
    samples = out / "3-images" / "samples.jsonl"
    lines = samples.read_text(encoding="utf-8").splitlines(keepends=True)
    for line in lines[5:]:
        (out / "3-images" / json.loads(line)["output"]).unlink()
    samples.write_text("".join(lines[:5]) + lines[5][:30], encoding="utf-8")  # killed mid-line
    shutil.rmtree(out / "4-scores")
    result = _pipeline(section5["release"], section5["models"], out, "--steps", "3", *section5["extra"])
    assert result.exit_code == 0, result.output
    record = json.loads((out / "pipeline.json").read_text(encoding="utf-8"))
    new = {s["stage"]: s["new_samples"] for s in record["stages"]}
    assert new["1-description"] == 0 and new["2-translation"] == 0 and new["3-images"] == 7
    for name in ("3-images/samples.jsonl", "4-scores/description_scores.csv"):
        assert (out / name).read_bytes() == (section5["out"] / name).read_bytes(), name
    for image in (section5["out"] / "3-images" / "images").iterdir():
        assert (out / "3-images" / "images" / image.name).read_bytes() == image.read_bytes()


@pytest.mark.e2e
def test_a_changed_stage_reruns_only_what_depends_on_it(section5, tmp_path: Path) -> None:
    out = tmp_path / "pipe"
    shutil.copytree(section5["out"], out)
    before = (out / "1-description" / "samples.jsonl").stat().st_mtime_ns
    result = _pipeline(section5["release"], section5["models"], out, "--steps", "4", *section5["extra"])
    assert result.exit_code == 0, result.output
    record = {
        s["stage"]: s for s in json.loads((out / "pipeline.json").read_text(encoding="utf-8"))["stages"]
    }
    assert (
        not record["1-description"]["rerun_because_changed"]
        and not record["2-translation"]["rerun_because_changed"]
    )
    assert record["3-images"]["rerun_because_changed"] and record["3-images"]["new_samples"] == 12
    assert record["4-scores"]["rerun_because_changed"] and record["5-correlations"]["rerun_because_changed"]
    assert (out / "1-description" / "samples.jsonl").stat().st_mtime_ns == before
    assert (out / "3-images.stale-1" / "samples.jsonl").is_file()  # moved aside, never deleted


@pytest.mark.e2e
def test_rows_without_embedded_images_are_skipped_and_counted(section5, tmp_path: Path) -> None:
    from culturebench.datasets.borsch.description import DescriptionScoresTask
    from culturebench.eval.dataset_ref import load_rows, resolve_dataset

    out, (_l, _s, dino) = section5["out"], section5["models"]
    rows = load_rows(
        resolve_dataset("borsch", revision=None, local=str(section5["release"]), repo=None),
        "parallel",
        "test",
        None,
    )
    first = json.loads((out / "3-images" / "samples.jsonl").read_text().splitlines()[0])["row_id"]
    stripped = [{**row, "images": []} if row["id"] == first else row for row in rows]
    task = DescriptionScoresTask(source=str(out / "3-images"), model=str(dino))
    metrics = task.analyse(tmp_path, stripped)
    assert metrics["n_skipped_no_ground_truth"] == 4  # 2 languages x 2 images of that dish
    assert metrics["n"] == 4
    with pytest.raises(Exception, match=r"DINOv2|dinov2"):
        DescriptionScoresTask(
            source=str(out / "3-images"), model=str(section5["models"][1] / "text_encoder")
        ).embedder()
