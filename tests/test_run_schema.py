"""The run folder's versioned schema (eval/records.py, docs/run-folder.md): a run describes
itself (normalised sample fields, a results.json naming its headline, kind, model label and
interval, thumbnails of its prompts' images), an older folder is read through the one upgrade
function, and the readers (site, reports, compare) read the folder alone: they import neither
the task registry, nor the Hub declarations (cards), nor the paper report."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from culturebench.eval.records import (
    RECORD_KEYS,
    SCHEMA_VERSION,
    STATUSES,
    SampleRule,
    record_fields,
    upgrade,
)

pytestmark = pytest.mark.integration  # most tests run a task on a built release

ROOT = Path(__file__).resolve().parents[1]
# the readers of a run folder, and what they must not import to read one
READERS = [*sorted((ROOT / "culturebench" / "site").glob("*.py")), ROOT / "eval" / "run_report.py",
           ROOT / "eval" / "compare.py"]  # fmt: skip
FORBIDDEN = ("culturebench.eval.paper_report", "culturebench.cards", "culturebench.eval.tasks",
             "culturebench.eval.hub_runs")  # fmt: skip


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return names


def test_readers_import_no_registry_cards_or_paper_report() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in READERS
        for name in _imports(path)
        if any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN)
    ]
    assert len(READERS) > 5 and not found, found


@pytest.mark.parametrize(
    ("sample", "rule", "want"),
    [
        ({"correct": True, "pred": "B", "parsed": True}, SampleRule(), ("scored", 1.0, "B")),
        ({"correct": False, "pred": None, "parsed": False}, SampleRule(), ("unparsed", 0.0, None)),
        ({"correct": False, "pred": None, "invalid_output": "array"}, SampleRule(), ("failed", 0.0, None)),
        ({"jaccard": 0.5, "predicted": ["RU"], "scored_chars": 20000}, SampleRule(), ("cut", 0.5, ["RU"])),
        ({"jaccard": 0.0, "predicted": []}, SampleRule(), ("unparsed", 0.0, None)),
        ({"description": "text"}, SampleRule(score=("description",)), ("unscored", None, None)),
        ({"a": True, "b": False}, SampleRule(score=("a", "b"), all_true=True), ("scored", 0.0, None)),
        ({"answer": None, "parsed": None}, SampleRule(score=(), answer=("answer",), empty_is_unparsed=False),
         ("unscored", None, None)),
    ],
)  # fmt: skip
def test_record_fields(sample: dict, rule: SampleRule, want: tuple) -> None:
    got = record_fields(sample, rule)
    assert (got["status"], got["score"], got["answer"]) == want
    assert got["status"] in STATUSES


def test_group_is_the_first_group_field_joined() -> None:
    assert record_fields({"continents": ["Asia", "Europe"], "category": "x"})["group"] == "Asia, Europe"
    assert record_fields({"lang": "ru"})["group"] is None


@pytest.fixture(scope="module")
def borsch_run(borsch_release, scripted_backend, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from culturebench.eval.runner import run_eval

    out = tmp_path_factory.mktemp("schema") / "run"
    run_eval(
        "borsch", "origin-qa", scripted_backend("Россия"), out, local=str(borsch_release.folder), limit=12
    )
    return out


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_a_run_describes_itself(borsch_run: Path) -> None:
    results = json.loads((borsch_run / "results.json").read_text(encoding="utf-8"))
    run = json.loads((borsch_run / "run.json").read_text(encoding="utf-8"))
    assert results["schema_version"] == run["schema_version"] == SCHEMA_VERSION
    # origin-qa's hub.result declares jaccard: pooled over the prompt languages
    assert results["headline"]["metric"] == "jaccard" and results["headline"]["n"] == results["samples"]
    assert results["kind"] == "generation" and results["prompt_images"] is False
    # a value pooled over the languages has no interval of its own, and says so
    assert results["headline"]["ci95"] is None and results["interval"] == "none"
    assert results["model_label"] == "scripted"
    samples = _lines(borsch_run / "samples.jsonl")
    assert samples and all(set(RECORD_KEYS) - {"images"} <= set(s) for s in samples)
    for s in samples:
        assert s["score"] == s["jaccard"] and s["group"] == ", ".join(s["gold_origins"])
        assert s["answer"] == (s["predicted"] or None)
        assert s["status"] == ("scored" if s["predicted"] else "unparsed")


def _as_version_1(folder: Path, dest: Path) -> Path:
    """A copy of ``folder`` as culturebench wrote it before schema version 2."""
    shutil.copytree(folder, dest)
    for name in ("run.json", "results.json"):
        data = json.loads((dest / name).read_text(encoding="utf-8"))
        for key in ("schema_version", "headline", "kind", "model_label", "interval", "prompt_images"):
            data.pop(key, None)
        (dest / name).write_text(json.dumps(data), encoding="utf-8")
    samples = [{k: v for k, v in s.items() if k not in RECORD_KEYS} for s in _lines(dest / "samples.jsonl")]
    (dest / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
    return dest


def test_version_1_folder_reads_as_the_current_schema(borsch_run: Path, tmp_path: Path) -> None:
    from culturebench.eval.run_folder import read_results, read_run, read_samples
    from culturebench.site.views import read_run_view

    old = _as_version_1(borsch_run, tmp_path / "v1")
    assert "schema_version" not in read_results(old)
    run, results, samples = upgrade(read_run(old), read_results(old), read_samples(old / "samples.jsonl"))
    current = _lines(borsch_run / "samples.jsonl")
    assert run is not None and results is not None and run["schema_version"] == SCHEMA_VERSION
    assert [{k: s.get(k) for k in RECORD_KEYS} for s in samples] == [
        {k: s.get(k) for k in RECORD_KEYS} for s in current
    ]
    assert results["schema_version"] == SCHEMA_VERSION and results["kind"] == "generation"
    assert results["model_label"] == "scripted" and results["headline"]["metric"] == "jaccard"
    view = read_run_view(old)  # the site reads it too (one headline, the samples' statuses)
    assert view.schema_version == 1 and view.headline is not None
    assert [s["status"] for _, s in view.lines if s] == [s["status"] for s in current]


def test_a_resumed_older_sample_is_upgraded_on_its_own(borsch_run: Path) -> None:
    current = _lines(borsch_run / "samples.jsonl")
    results = json.loads((borsch_run / "results.json").read_text(encoding="utf-8"))
    mixed = [{k: v for k, v in current[0].items() if k not in RECORD_KEYS}, *current[1:]]
    _, _, samples = upgrade(None, results, mixed)
    assert samples[0]["status"] == current[0]["status"] and samples[0]["score"] == current[0]["score"]


def test_a_later_schema_is_refused_in_one_line() -> None:
    from culturebench.errors import CultureBenchError

    with pytest.raises(CultureBenchError, match="schema version 99"):
        upgrade({"schema_version": 99}, None)


def test_the_dataset_pin_round_trips() -> None:
    from culturebench.errors import CultureBenchError
    from culturebench.eval.dataset_ref import DatasetRef

    ref = DatasetRef("borsch", "local", "/x", None, None, "ab" * 32, "1.0.0")
    assert DatasetRef.from_pin(ref.to_pin()) == ref
    old = {k: v for k, v in ref.to_pin().items() if k != "version"}  # an older pin: field absent
    assert DatasetRef.from_pin(old).version is None
    with pytest.raises(CultureBenchError, match="malformed"):
        DatasetRef.from_pin({**ref.to_pin(), "colour": "red"})


def test_a_vision_run_keeps_its_thumbnails(foodieqa_download: Path, scripted_backend, tmp_path: Path) -> None:
    """The site draws a vision run's images from the run folder: with the release gone."""
    from culturebench.builders import get_builder
    from culturebench.eval.runner import run_eval
    from culturebench.site.samples import Thumbnails, run_images
    from culturebench.site.views import read_run_view

    release = get_builder("foodieqa").build(source=str(foodieqa_download), out_root=tmp_path / "dist").folder
    out = tmp_path / "run"
    run_eval("foodieqa", "single-image", scripted_backend("B"), out, local=str(release), limit=4)
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["prompt_images"] is True and results["kind"] == "multiple-choice"
    samples = _lines(out / "samples.jsonl")
    kept = {rel for s in samples for rel in s["images"]}
    assert kept and all(
        rel.startswith("thumbs/") and (out / rel).read_bytes()[:2] == b"\xff\xd8" for rel in kept
    )
    shutil.rmtree(release)  # the site never reloads the dataset
    (tmp_path / "site").mkdir()
    paths, note = run_images(read_run_view(out), Thumbnails(tmp_path / "site"))
    assert paths is not None and not note
    assert all((tmp_path / "site" / p).is_file() for p in paths(samples[0])) and paths(samples[0])
