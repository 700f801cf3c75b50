"""Image-generation evaluations (World Wide Dishes §3): the diffusers and OpenAI-images
text-to-image backends, CLIP/DINOv2 embeddings with their cache, and the t2i-generate,
vqa-probes and clip-descriptors tasks, end to end on tiny local models (no downloads)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.hashing import sha256_bytes, sha256_file

pytestmark = [pytest.mark.unit, pytest.mark.usefixtures("one_torch_thread")]


def _pixels(data: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(int)


def _diffusers(path: Path, *, seed: int = 0, batch_size: int = 1, steps: int = 3):
    from culturebench.eval.backends import ImageParams, make_image_backend

    params = ImageParams(width=64, height=64, steps=steps, seed=seed)
    return make_image_backend("diffusers", str(path), sampling=params, batch_size=batch_size)


# ---------------------------------------------------------------------- diffusers backend
@pytest.mark.e2e
def test_diffusers_seeded_generation_is_byte_identical_and_seed_dependent(tiny_sd: Path) -> None:
    from culturebench.eval.backends import Request

    requests = [
        Request("a", "Generate a photograph of food from Kenya called Ugali."),
        Request("b", "Jollof"),
    ]
    first = _diffusers(tiny_sd, seed=3).generate_images(requests)
    again = _diffusers(tiny_sd, seed=3).generate_images(requests)  # a fresh load from the folder
    other = _diffusers(tiny_sd, seed=4).generate_images(requests)
    assert first == again
    assert all(data.startswith(b"\x89PNG") for data in first)
    assert _pixels(first[0]).shape == (64, 64, 3)
    assert first[0] != other[0] and first[0] != first[1]
    # each image has its own generator: batching changes at most float rounding
    batched = _diffusers(tiny_sd, seed=3, batch_size=2).generate_images(requests)
    assert max(int(np.abs(_pixels(a) - _pixels(b)).max()) for a, b in zip(first, batched, strict=True)) <= 2


@pytest.mark.e2e
def test_diffusers_provenance_names_pipeline_scheduler_and_settings(tiny_sd: Path) -> None:
    info = _diffusers(tiny_sd, seed=5, steps=4).describe()
    assert info["backend"] == "diffusers" and info["pipeline_class"] == "StableDiffusionPipeline"
    assert info["scheduler"] == "DDIMScheduler" and info["scheduler_config"]["steps_offset"] == 1
    assert info["sampling"] == {"width": 64, "height": 64, "steps": 4, "guidance": None, "seed": 5}
    assert info["defaults"]["guidance_scale"] == 7.5  # what guidance None means for this pipeline
    assert len(info["weights_sha256"]) == 64 and info["dtype"] == "float32"


def test_diffusers_unloadable_model_is_one_line(tmp_path: Path) -> None:
    from culturebench.eval.backends.base import ModelLoadError

    with pytest.raises(ModelLoadError, match="cannot load text-to-image pipeline"):
        _diffusers(tmp_path / "nothing").load()


# ---------------------------------------------------------------------- OpenAI images backend
def _openai_images(base_url: str, **options):
    from culturebench.eval.backends import ImageParams, make_image_backend

    return make_image_backend(
        "openai-images",
        "dall-e-2",
        base_url=base_url,
        sampling=ImageParams(96, 64),
        backoff_s=0.01,
        **options,
    )


@pytest.mark.integration
@pytest.mark.parametrize("mode", ["b64", "url"])
def test_openai_images_backend_against_a_local_server(servers, mode: str, monkeypatch) -> None:
    from culturebench.eval.backends import Request

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-123456")
    with servers.fake_openai_images(mode=mode, script=[429, 503]) as server:
        backend = _openai_images(server.base_url, concurrency=1, quality="standard")
        images = backend.generate_images(
            [Request("x", "Generate a photograph of food from Kenya called Ugali.")]
        )
        calls = [r for r in server.requests if r["path"].endswith("/images/generations")]
    assert _pixels(images[0]).shape == (64, 96, 3)
    assert len(calls) == 3  # 429 and 503 retried (Retry-After honoured), then the image
    assert calls[-1]["body"] == {
        "model": "dall-e-2",
        "prompt": "Generate a photograph of food from Kenya called Ugali.",
        "n": 1,
        "size": "96x64",
        "response_format": "b64_json",
        "quality": "standard",
    }
    assert calls[-1]["auth"] == "Bearer sk-test-key-123456"
    described = json.dumps(backend.describe())
    assert "sk-test" not in described and '"seeded": false' in described


@pytest.mark.integration
@pytest.mark.parametrize(
    ("mode", "script", "message"),
    [
        ("b64", [400], "HTTP 400"),
        ("bad-base64", [], "not base64"),
        ("not-image", [], "not an image"),
    ],
)
def test_openai_images_backend_errors_are_one_line(
    servers, mode: str, script: list[int], message: str
) -> None:
    from culturebench.eval.backends import Request
    from culturebench.eval.backends.openai_backend import EndpointError

    with servers.fake_openai_images(mode=mode, script=script) as server:
        backend = _openai_images(server.base_url)
        with pytest.raises(EndpointError, match=message) as caught:
            backend.generate_images([Request("dish-1", "x")])
        assert len(server.requests) == 1  # a 4xx or a bad answer is not retried
    assert "\n" not in str(caught.value) and "dish-1" in str(caught.value)


# ---------------------------------------------------------------------- embeddings
@pytest.mark.e2e
def test_clip_and_dinov2_embeddings_are_batched_and_cached(
    tiny_clip: Path, tiny_dinov2: Path, tmp_path: Path, servers, monkeypatch
) -> None:
    from culturebench.eval.embeddings import EmbeddingError, ImageEmbedder, cosine_matrix

    images = [servers.png_bytes((40, 30), seed=i) for i in range(3)] + [servers.png_bytes((40, 30), seed=0)]
    for folder, kind, dim in ((tiny_clip, "clip", 16), (tiny_dinov2, "dinov2", 32)):
        embedder = ImageEmbedder(str(folder), cache_dir=tmp_path / "cache", batch_size=2)
        vectors = embedder.embed_images(images)
        assert embedder.kind == kind and vectors.shape == (4, dim)
        assert np.array_equal(vectors[0], vectors[3])  # same bytes, same vector
        assert cosine_matrix(vectors[:1], vectors[3:])[0, 0] == pytest.approx(1.0, abs=1e-5)
        assert not np.allclose(vectors[0], vectors[1])
        # a second embedder reads the cache: the model is never run
        cached = ImageEmbedder(str(folder), cache_dir=tmp_path / "cache")
        calls: list = []
        monkeypatch.setattr(cached, "_forward_images", calls.append)
        assert np.array_equal(cached.embed_images(images), vectors) and calls == []
    with pytest.raises(EmbeddingError, match="no text tower"):
        ImageEmbedder(str(tiny_dinov2), cache=False).embed_texts(["a photo of clean food"])
    with pytest.raises(EmbeddingError, match=r"bad\.png: not a readable image"):
        ImageEmbedder(str(tiny_clip), cache=False).embed_images([b"not an image"], names=["bad.png"])
    texts = ImageEmbedder(str(tiny_clip), cache=False).embed_texts(
        ["a photo of clean food", "a photo of dirty food"]
    )
    assert texts.shape == (2, 16) and not np.allclose(texts[0], texts[1])


@pytest.mark.integration
def test_embedding_cache_is_keyed_by_weights(tmp_path: Path, servers) -> None:
    from culturebench.eval.embeddings import ImageEmbedder
    from culturebench.eval.tiny import build_tiny_clip

    image = [servers.png_bytes((32, 32), seed=1)]
    a = build_tiny_clip(tmp_path / "a", seed=0)
    b = build_tiny_clip(tmp_path / "b", seed=1)
    first = ImageEmbedder(str(a), cache_dir=tmp_path / "cache").embed_images(image)
    second = ImageEmbedder(str(b), cache_dir=tmp_path / "cache").embed_images(image)
    assert not np.allclose(first, second)  # other weights never reuse a cached vector
    assert len(list((tmp_path / "cache").iterdir())) == 2


# ---------------------------------------------------------------------- t2i-generate
def _generate(release: Path, model: Path, out: Path, *extra: str):
    return CliRunner().invoke(
        app,
        ["eval", "run", "wwd", "--task", "t2i-generate", "--backend", "diffusers", "--model", str(model),
         "--local", str(release), "--size", "64x64", "--steps", "3", "--batch-size", "2", "--out", str(out),
         *extra],
    )  # fmt: skip


@pytest.fixture(scope="module")
def t2i_run(wwd_release: Path, tiny_sd: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 dishes x 2 seeds from the real WWD release with the tiny pipeline."""
    import torch

    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("t2i") / "run"
    result = _generate(wwd_release.folder, tiny_sd, out, "--limit", "3", "--repeat-seeds", "0,1")
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.e2e
def test_t2i_generate_writes_pngs_with_their_sha256_and_provenance(t2i_run: Path) -> None:
    samples = [
        json.loads(line) for line in (t2i_run / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert len(samples) == 6 and {s["seed"] for s in samples} == {0, 1}
    for sample in samples:
        image = t2i_run / sample["output"]
        assert image.is_file() and sha256_file(image) == sample["image_sha256"]
        assert sample["prompt"] == (
            f"Generate a photograph of food from {', '.join(sample['countries'])} called {sample['dish']}. "
            "The food should be served, ready to be eaten."
        )
    assert len({s["image_sha256"] for s in samples}) == 6
    run = json.loads((t2i_run / "run.json").read_text(encoding="utf-8"))
    assert run["seeds"] == [0, 1] and run["model"]["scheduler"] == "DDIMScheduler"
    assert run["sampling_per_seed"]["1"] == {
        "width": 64,
        "height": 64,
        "steps": 3,
        "guidance": None,
        "seed": 1,
    }
    results = json.loads((t2i_run / "results.json").read_text(encoding="utf-8"))
    assert results["metrics"]["n"] == 6 and results["metrics"]["n_dishes"] == 3


@pytest.mark.e2e
def test_t2i_generate_resumes_per_item_and_seed_to_identical_images(
    t2i_run: Path, wwd_release: Path, tiny_sd: Path, tmp_path: Path
) -> None:
    import shutil

    out = tmp_path / "run"
    shutil.copytree(t2i_run, out)
    lines = (out / "samples.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    kept = lines[:2]
    for line in lines[2:]:  # a run killed after two images (plus a torn line)
        (out / json.loads(line)["output"]).unlink()
    (out / "samples.jsonl").write_text("".join(kept) + lines[2][:20], encoding="utf-8")
    before = {p.name: p.stat().st_mtime_ns for p in (out / "images").iterdir()}
    result = _generate(wwd_release.folder, tiny_sd, out, "--limit", "3", "--repeat-seeds", "0,1")
    assert result.exit_code == 0, result.output
    assert {p.name: p.stat().st_mtime_ns for p in (out / "images").iterdir() if p.name in before} == before
    for name in sorted(p.name for p in (t2i_run / "images").iterdir()):
        assert (out / "images" / name).read_bytes() == (t2i_run / "images" / name).read_bytes(), name
    # an image altered on disk is named, not silently reused
    victim = sorted((out / "images").iterdir())[0]
    victim.write_bytes(b"changed")
    result = _generate(wwd_release.folder, tiny_sd, out, "--limit", "3", "--repeat-seeds", "0,1")
    assert result.exit_code != 0 and "missing or altered" in result.output
    assert "Traceback" not in result.output


@pytest.mark.e2e
def test_t2i_generate_needs_an_image_backend(wwd_release: Path, tiny_model: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["eval", "run", "wwd", "--task", "t2i-generate", "--model", str(tiny_model),
         "--local", str(wwd_release.folder), "--out", str(tmp_path / "x")],
    )  # fmt: skip
    assert result.exit_code != 0 and "needs a text-to-image backend" in result.output
    assert not (tmp_path / "x" / "run.json").exists()


@pytest.mark.integration
@pytest.mark.parametrize(
    ("suite", "count", "first"), [("africa5", 150, "Nigeria"), ("us", 30, "the United States of America")]
)
def test_t2i_suites_come_from_the_paper_test_suites(
    wwd_release: Path, suite: str, count: int, first: str
) -> None:
    from culturebench.datasets.wwd.image_tasks import T2IGenerate
    from culturebench.eval.dataset_ref import load_rows, resolve_dataset

    rows = load_rows(
        resolve_dataset("wwd", revision=None, local=str(wwd_release.folder), repo=None),
        "default",
        "test",
        None,
    )
    requests, skipped = T2IGenerate(suite=suite).build(rows, ["en"])
    assert len(requests) == count and requests[0].meta["countries"] == [first]
    assert len({r.request.id for r in requests}) == count
    matched = sum(r.meta["row_id"] is not None for r in requests)
    assert skipped.get("suite dishes without a matching release row", 0) == count - matched
    if suite == "africa5":  # drawn from WWD: 127 of 150 names equal a release row's (others are variants)
        assert matched == 127
    else:  # the US suite is curated separately from WWD (paper §3.1, footnote 4): no row shares a name
        assert matched == 0
    if suite == "africa5":
        assert {r.meta["countries"][0] for r in requests} == {
            "Nigeria",
            "Cameroon",
            "Algeria",
            "South Africa",
            "Kenya",
        }
        assert requests[0].request.prompt == (
            "Generate a photograph of food from Nigeria called Abacha. "
            "The food should be served, ready to be eaten."
        )
    else:
        assert requests[0].meta["regions"] == ["New England"]


@pytest.mark.integration
def test_shipped_suites_and_questions_equal_the_upstream_files(upstream_wwd: Path) -> None:
    from culturebench.datasets.wwd.image_tasks import FOLDER, image_eval

    spec = image_eval()
    entries = [*spec["test_suites"].values(), *spec["vqa_questions"].values()]
    for entry in entries:
        shipped = FOLDER / entry["file"]
        assert sha256_file(shipped) == entry["sha256"]
        upstream = upstream_wwd / entry["file"]
        if upstream.is_file():
            assert sha256_file(upstream) == entry["sha256"], entry["file"]


# ---------------------------------------------------------------------- VQA probes
@pytest.mark.parametrize(
    ("answer", "letter"),
    [
        ("A", "A"),
        ("B.", "B"),
        ("(C) Metal", "C"),
        ("D: Plastic", "D"),
        ("The answer is E.", "E"),
        ("Option (G)", "G"),
        ("ceramic", "A"),
        ("I think it is wood", None),  # "I" as a word is not choice I
        ("A plate made of clay", None),  # "A" as an article is not choice A
        ("Z", None),  # not a choice
        ("", None),
        ("Ceramic or glass", None),
    ],
)
def test_vqa_answer_letters_are_parsed_by_fixed_rules(answer: str, letter: str | None) -> None:
    from culturebench.datasets.wwd.image_tasks import parse_choice

    choices = {
        "A": "Ceramic",
        "B": "Glass",
        "C": "Metal",
        "D": "Plastic",
        "E": "Wood",
        "F": "Paper",
        "G": "Clay",
    }
    assert parse_choice(answer, choices) == letter


@pytest.mark.e2e
def test_vqa_probes_shares_per_region_and_model(t2i_run: Path, scripted_backend, tmp_path: Path) -> None:
    from culturebench.eval.runner import run_eval

    def answer(prompt: str) -> str:  # "A" for the food question, prose for the rest
        return "A" if "Is this a picture of food?" in prompt else "Hard to say."

    results = run_eval(
        "wwd", "vqa-probes", scripted_backend(answer), tmp_path / "vqa", task_options={"images": str(t2i_run)}
    )
    metrics = results["metrics"]
    assert metrics["n"] == 6 * 15 and metrics["n_free_form"] == 6  # 16 questions, Q9 free form
    assert metrics["n_unparsed"] == 6 * 14  # "Hard to say." is never guessed into a letter
    label = Path(json.loads((t2i_run / "run.json").read_text(encoding="utf-8"))["model"]["model"]).name
    assert {k.split(" | ")[2] for k in metrics["distribution"]} == {label}  # the T2I model
    q1 = {k: v for k, v in metrics["distribution"].items() if k.startswith("Q1 |")}
    assert q1 and all(v["A"] == 1.0 and v["B"] == 0.0 and v["unparsed"] == 0.0 for v in q1.values())
    assert sum(v["n"] for v in q1.values()) >= 6
    run = json.loads((tmp_path / "vqa" / "run.json").read_text(encoding="utf-8"))
    assert run["dataset"] == json.loads((t2i_run / "run.json").read_text(encoding="utf-8"))["dataset"]
    assert (tmp_path / "vqa" / "vqa_Q1.png").is_file()  # Fig. F.9 style, one per question


# ---------------------------------------------------------------------- CLIP descriptors
def test_clip_descriptor_formula_by_hand() -> None:
    from culturebench.datasets.wwd.clip_descriptors import score_groups

    positive = np.array([[1.0, 0.0]])
    negative = np.array([[0.0, 1.0]])
    # image 1 along the positive descriptor (net +1), image 2 along the negative (net -1),
    # image 3 halfway (net 0): min-max to [-1, 1] leaves them at +1, -1, 0
    groups = [
        ("Africa", "m", np.array([[1.0, 0.0], [0.0, 1.0]])),
        ("Asia", "m", np.array([[1.0, 1.0]])),
    ]
    rows = score_groups(groups, positive, negative)
    assert rows[0]["mean"] == pytest.approx(0.0) and rows[0]["n"] == 2
    assert rows[0]["sem"] == pytest.approx(np.std([1.0, -1.0], ddof=1) / np.sqrt(2))
    assert rows[1]["mean"] == pytest.approx(0.0) and rows[1]["sem"] == 0.0
    # S+ - S- as printed adds both similarities: images 1 and 2 both score cos 1 (-> -1 after
    # min-max) and image 3 scores 1.41 (-> +1); positive and negative become indistinguishable
    literal = score_groups(groups, positive, negative, literal=True)
    assert literal[0]["mean"] == pytest.approx(-1.0) and literal[1]["mean"] == pytest.approx(1.0)


@pytest.mark.integration
def test_clip_descriptors_task_on_the_published_embeddings(upstream_wwd: Path, tmp_path: Path) -> None:
    from culturebench.datasets.wwd.clip_descriptors import read_descriptors, scores

    folder = upstream_wwd / "clip_probing"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "run",
            "wwd",
            "--task",
            "clip-descriptors",
            "--option",
            f"embeddings={folder}",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    with open(tmp_path / "descriptor_scores.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 18 and {r["n"] for r in rows} == {"50"}  # 6 continents x 3 models x 50 images
    ours = scores(folder)
    assert [float(r["mean"]) for r in rows] == [round(r["mean"], 4) for r in ours]
    positive, negative, _p, _n = read_descriptors(folder)
    assert (len(positive), len(negative)) == (9, 7)  # the paper's 16 descriptors
    assert [r["mean"] for r in ours] != [r["mean"] for r in scores(folder, literal=True)]
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert results["provenance"]["dataset"]["source"] == "none"
    assert len(results["provenance"]["inputs"]["files_sha256"]) == 20
    assert (tmp_path / "descriptor_scores.png").is_file() and "descriptor_scores.png" in (
        tmp_path / "report.md"
    ).read_text(encoding="utf-8")


@pytest.mark.e2e
def test_clip_descriptors_task_on_generated_images(t2i_run: Path, tiny_clip: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["eval", "run", "wwd", "--task", "clip-descriptors", "--option", f"images={t2i_run}", "--model",
         str(tiny_clip), "--out", str(tmp_path / "g")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / "g" / "results.json").read_text(encoding="utf-8"))
    assert results["metrics"]["n"] == 6
    assert results["provenance"]["inputs"]["clip"]["kind"] == "clip"
    groups = results["metrics"]["per_group"]
    label = Path(json.loads((t2i_run / "run.json").read_text(encoding="utf-8"))["model"]["model"]).name
    assert sum(g["n"] for g in groups.values()) >= 6 and all(k.endswith(f" / {label}") for k in groups)
    for flags, message in (
        ([], "exactly one of"),
        (["--option", f"images={t2i_run}"], "needs --model"),
        (
            ["--option", f"images={t2i_run}", "--option", "embeddings=x", "--model", str(tiny_clip)],
            "exactly one",
        ),
    ):
        bad = CliRunner().invoke(
            app, ["eval", "run", "wwd", "--task", "clip-descriptors", *flags, "--out", str(tmp_path / "bad")]
        )
        assert bad.exit_code != 0 and message in bad.output, bad.output


# ---------------------------------------------------------------------- CLI
def test_tiny_model_command_builds_each_kind(tmp_path: Path) -> None:
    from diffusers import DiffusionPipeline

    result = CliRunner().invoke(app, ["eval", "tiny-model", str(tmp_path / "sd"), "--t2i"])
    assert result.exit_code == 0, result.output
    assert (
        json.loads((tmp_path / "sd" / "model_index.json").read_text())["_class_name"]
        == "StableDiffusionPipeline"
    )
    assert type(DiffusionPipeline.from_pretrained(tmp_path / "sd")).__name__ == "StableDiffusionPipeline"
    result = CliRunner().invoke(app, ["eval", "tiny-model", str(tmp_path / "two"), "--clip", "--dinov2"])
    assert result.exit_code != 0 and "choose one of" in result.output


@pytest.mark.integration
def test_generation_tasks_need_a_model_and_score_skips_image_tasks(wwd_release, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "run",
            "wwd",
            "--task",
            "country",
            "--local",
            str(wwd_release.folder),
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code != 0 and "needs --model" in result.output
    from culturebench.eval.tasks import registry

    kinds = {name: cls.output_kind for name, cls in registry()["wwd"].items()}
    assert kinds["t2i-generate"] == "image" and kinds["clip-descriptors"] == "none"
    assert kinds["country"] == "text" and kinds["vqa-probes"] == "text"


def test_png_writing_is_deterministic() -> None:
    from PIL import Image

    from culturebench.eval.backends.image_base import png_bytes

    image = Image.new("RGB", (8, 8), (10, 20, 30))
    assert sha256_bytes(png_bytes(image)) == sha256_bytes(png_bytes(image.copy()))


# ---------------------------------------------------------------------- GPU
def _cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


@pytest.mark.e2e
@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU")
def test_diffusers_on_cuda_in_half_precision(tiny_sd: Path) -> None:
    from culturebench.eval.backends import ImageParams, Request, make_image_backend

    backend = make_image_backend(
        "diffusers", str(tiny_sd), sampling=ImageParams(64, 64, 4, seed=1), device="cuda", dtype="float16",
        batch_size=4,
    )  # fmt: skip
    requests = [Request(str(i), f"food {i}") for i in range(4)]
    first = backend.generate_images(requests)
    assert first == backend.generate_images(requests)  # seeded generators on the GPU
    assert backend.describe()["device_type"] == "cuda" and _pixels(first[0]).shape == (64, 64, 3)
