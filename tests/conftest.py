"""Shared fixtures: the real BORSCH upstream snapshot, one release built from it per
session, and helpers to make defective copies of the upstream files."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Nothing in the suite may reach a hub, or see a real token. HF_HOME must be set before
# huggingface_hub is first imported (its paths are read at import time).
os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="cb-hf-home-")
os.environ.pop("HF_TOKEN", None)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
# The response cache shared across runs is off for the suite (each test's runs are its own);
# tests/test_response_cache.py turns it on with a folder of its own.
os.environ["CULTUREBENCH_RESPONSE_CACHE"] = "off"

REPO = Path(__file__).resolve().parent.parent

# The suite tests the installed culturebench (an editable install maps it to this checkout; a
# wheel install is the wheel), never the checkout's folder picked up because Python puts the
# current folder first: drop the repository root from sys.path here, and keep subprocesses
# (``python -c``, ``python -m culturebench`` run from the root) from adding it (Python 3.11+).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO]
os.environ["PYTHONSAFEPATH"] = "1"
SHARED_BORSCH = REPO.parent / "shared" / "upstream" / "borsch"
SHARED_WWD = REPO.parent / "shared" / "upstream" / "wwd"


@pytest.fixture(scope="session", autouse=True)
def _isolated_caches(tmp_path_factory: pytest.TempPathFactory) -> None:
    cache = tmp_path_factory.mktemp("cache")
    os.environ["CULTUREBENCH_CACHE"] = str(cache / "culturebench")


def _shared_snapshot(folder: Path, marker: str) -> Path:
    """A real upstream snapshot under ../shared; CI must have it, elsewhere the test skips."""
    if not (folder / marker).exists():
        if os.environ.get("CI"):
            pytest.fail(f"CI must run with ../shared beside the clone; {folder} is missing")
        pytest.skip(f"real upstream snapshot not found at {folder}")
    return folder


@pytest.fixture(scope="session")
def upstream_borsch() -> Path:
    """The real upstream snapshot (../shared/upstream/borsch), never modified."""
    return _shared_snapshot(SHARED_BORSCH, "RU_DATA.xlsx")


@pytest.fixture(scope="session")
def borsch_release(upstream_borsch: Path, tmp_path_factory: pytest.TempPathFactory):
    """One full BORSCH release built from the real upstream (shared by read-only tests)."""
    from culturebench.builders import get_builder

    out = tmp_path_factory.mktemp("dist")
    return get_builder("borsch").build(source=str(upstream_borsch), out_root=out)


@pytest.fixture(scope="session")
def upstream_wwd() -> Path:
    """The real World Wide Dishes snapshot (../shared/upstream/wwd), never modified."""
    return _shared_snapshot(SHARED_WWD, "countries_with_continent.csv")


@pytest.fixture(scope="session")
def wwd_release(upstream_wwd: Path, tmp_path_factory: pytest.TempPathFactory):
    """One World Wide Dishes release built from the real CSV."""
    from culturebench.builders import get_builder

    return get_builder("wwd").build(source=str(upstream_wwd), out_root=tmp_path_factory.mktemp("dist-wwd"))


def _writable_copy(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest)
    for path in dest.iterdir():
        path.chmod(0o644)
    return dest


@pytest.fixture
def upstream_copy(upstream_borsch: Path, tmp_path: Path) -> Path:
    """A writable copy of the BORSCH upstream snapshot for defect tests."""
    return _writable_copy(upstream_borsch, tmp_path / "upstream")


@pytest.fixture
def wwd_copy(upstream_wwd: Path, tmp_path: Path) -> Path:
    """A writable copy of the World Wide Dishes upstream snapshot for defect tests."""
    return _writable_copy(upstream_wwd, tmp_path / "wwd-upstream")


def rewrite_csv(path: Path, edit) -> None:
    """Read a CSV into lists, let ``edit`` change them in place, write it back."""
    import csv

    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    edit(rows)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)


@pytest.fixture(scope="session")
def csv_editor():
    """:func:`rewrite_csv` (tests/ is not a package, so helpers come as fixtures)."""
    return rewrite_csv


def _helper(name: str):
    """Load a helper module that sits beside this file (tests/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def servers():
    """tests/servers.py: static HTTP server, olah (local Hub), the failing-upload fake, and a
    generic server-process starter; all on 127.0.0.1, started and stopped by the tests."""
    return _helper("servers")


@pytest.fixture(scope="session")
def served(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory, servers):
    """`transformers serve` with the tiny model, on 127.0.0.1 (tests/servers.py), shared by
    the modules that need a real OpenAI-compatible server; yields its ``/v1`` base URL."""
    with servers.transformers_serve(tiny_model, tmp_path_factory.mktemp("serve")) as url:
        yield url


@pytest.fixture(scope="session")
def batch_api(servers):
    """tests/fake_batch_api.py: a FAKE of OpenAI's files and batches endpoints whose batches
    are run by a real engine (a served model, or `vllm run-batch`)."""
    return _helper("fake_batch_api")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama + locally trained tokenizer, saved to a folder (no hub)."""
    return _helper("tiny_model").build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def tiny_vlm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random LLaVA-style vision-language model + processor, saved to a folder (no hub)."""
    return _helper("tiny_model").build_tiny_llava(tmp_path_factory.mktemp("tiny-llava"))


@pytest.fixture
def one_torch_thread():
    """torch on one thread for the test: seeded image generation is byte-identical only at a
    fixed thread count (shared/notes/stack.md)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def image_source():
    """tests/image_world.py ``write_image_source``: a BORSCH sample source whose images are
    real bytes on a local server (see there)."""
    return _helper("image_world").write_image_source


@pytest.fixture(scope="session")
def borsch_image_release(image_source, servers, tmp_path_factory: pytest.TempPathFactory):
    """A BORSCH sample release with every image embedded (distinct noise PNGs, all licensed),
    built through the image stage against a local image server and Commons replay."""
    import io

    import numpy as np
    from PIL import Image

    from culturebench.builders import get_builder
    from culturebench.images.fetch import ImageCache
    from culturebench.images.stage import ImageOptions

    def noise(k: int, row: dict) -> tuple[bytes, bytes]:
        rng = np.random.default_rng(k)
        buffer = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, size=(64, 64, 3), dtype=np.uint8)).save(buffer, format="PNG")
        return buffer.getvalue(), buffer.getvalue()

    tmp = tmp_path_factory.mktemp("borsch-images")
    source, served, titles, _rows = image_source(tmp, noise, lambda k: True)
    with servers.serve_folder(served) as mirror, servers.commons_replay(titles) as (api, _seen):
        options = ImageOptions(
            mirror=mirror, commons_api=api, allow=("127.0.0.1",), cache=ImageCache(tmp / "c")
        )
        return get_builder("borsch").build(source=str(source), out_root=tmp / "dist", images=options)


@pytest.fixture(scope="session")
def tiny_sd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Stable Diffusion pipeline (64x64), saved with save_pretrained (no hub)."""
    return _helper("tiny_model").build_tiny_sd(tmp_path_factory.mktemp("tiny-sd"))


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random CLIP (image and text towers) + processor, saved to a folder (no hub)."""
    return _helper("tiny_model").build_tiny_clip(tmp_path_factory.mktemp("tiny-clip"))


@pytest.fixture(scope="session")
def tiny_dinov2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random DINOv2 + image processor, saved to a folder (no hub)."""
    return _helper("tiny_model").build_tiny_dinov2(tmp_path_factory.mktemp("tiny-dinov2"))


@pytest.fixture(scope="session")
def foodieqa_download(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic FoodieQA download in the exact upstream layout (tests/foodieqa_fixture.py)."""
    return _helper("foodieqa_fixture").write_foodieqa(tmp_path_factory.mktemp("foodieqa_download"))


@pytest.fixture(scope="session")
def scripted_backend():
    """tests/scripted_backend.py: our Backend interface answering with fixed texts."""
    return _helper("scripted_backend").ScriptedBackend


@pytest.fixture(scope="session")
def wwd_probing(upstream_wwd: Path) -> Path:
    """The WWD authors' LLM-probing files (GPT-3.5 answers, comparisons, stats)."""
    folder = upstream_wwd / "llm_probing"
    if not (folder / "gpt35_dish_info_cleaned_results.csv").is_file():
        pytest.skip("the WWD probing files are not in this upstream snapshot")
    return folder


def _score_gpt35(probing: Path, release: Path, out: Path, *extra: str) -> Path:
    """`eval score wwd --layout wwd-probing` of the authors' three GPT-3.5 files into ``out``."""
    from typer.testing import CliRunner

    from culturebench.cli import app

    args = ["eval", "score", "wwd", "--layout", "wwd-probing", "--local", str(release), "--out", str(out)]
    for name in ("cleaned_results", "cleaned_compared", "failures"):
        args += ["--generations", str(probing / f"gpt35_dish_info_{name}.csv")]
    result = CliRunner().invoke(app, [*args, *extra])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="session")
def gpt35_scored(wwd_probing: Path, wwd_release, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The authors' GPT-3.5 files scored once by `eval score wwd --layout wwd-probing`."""
    return _score_gpt35(wwd_probing, wwd_release.folder, tmp_path_factory.mktemp("score") / "gpt35")


@pytest.fixture(scope="session")
def gpt35_recorded(wwd_probing: Path, wwd_release, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same files scored with `--matcher recorded`: the authors' own GPT-3.5 judgments."""
    out = tmp_path_factory.mktemp("score") / "gpt35-recorded"
    return _score_gpt35(wwd_probing, wwd_release.folder, out, "--matcher", "recorded")


@contextlib.contextmanager
def _read_only(folder: Path) -> Iterator[None]:
    """``folder`` read-only for this process: mode 0555, and the immutable flag when running as
    root (root writes through a 0555 folder). Restored afterwards."""
    os.chmod(folder, 0o555)
    immutable = False
    if os.geteuid() == 0:
        immutable = shutil.which("chattr") is not None and (
            subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0
        )
        if not immutable:
            os.chmod(folder, 0o755)
            pytest.skip("running as root without chattr: cannot make a folder read-only")
    try:
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        os.chmod(folder, 0o755)


@pytest.fixture
def read_only():
    """``read_only(folder)``: a context manager making ``folder`` read-only for this process
    (the immutable flag as root), restored afterwards."""
    return _read_only


# ------------------------------------------------------------------ tiers and extras
# Every test gets one tier marker from what it uses (declared in pyproject.toml):
# - e2e: runs a model (a tiny one built here, SmolLM2, a harness, vLLM) or the docs in order;
# - integration: starts a server or a subprocess, or reads the real upstream snapshots;
# - unit: none of these (`pytest -m unit` is the fast tier).
MODEL_FIXTURES = {"tiny_model", "tiny_vlm", "tiny_sd", "tiny_clip", "tiny_dinov2", "borsch_image_release"}
E2E_MODULES = {"test_real_model", "test_docs_walk", "test_harness_interop", "test_vllm"}
INTEGRATION_FIXTURES = {
    "servers", "borsch_release", "wwd_release", "upstream_borsch", "upstream_wwd", "upstream_copy",
    "wwd_copy", "image_source", "foodieqa_download", "read_only", "wwd_probing",
}  # fmt: skip
SUBPROCESS_MODULES = {
    "test_cli_first_contact", "test_corpus", "test_corpus_inputs", "test_eval_backends",
    "test_eval_run", "test_eval_yaml", "test_harness_and_results_inputs", "test_hub_results",
    "test_output_folders", "test_packaging", "test_progress_and_stop", "test_release",
    "test_release_integrity", "test_tampered_inputs", "test_toy_dataset", "test_urlcheck_network",
}  # fmt: skip


def tier(item: pytest.Item) -> str:
    """``unit``, ``integration`` or ``e2e`` for one test, from its fixtures and module."""
    fixtures = set(getattr(item, "fixturenames", ()))
    module = item.path.stem
    if fixtures & MODEL_FIXTURES or module in E2E_MODULES:
        return "e2e"
    if fixtures & INTEGRATION_FIXTURES or module in SUBPROCESS_MODULES:
        return "integration"
    return "unit"


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if not any(item.get_closest_marker(name) for name in ("unit", "integration", "e2e")):
            item.add_marker(getattr(pytest.mark, tier(item)))
        for mark in item.iter_markers("extra"):  # @pytest.mark.extra("corpus"): skip without it
            missing = _missing_packages(mark.args[0])
            if missing:
                item.add_marker(
                    pytest.mark.skip(
                        reason=f"needs the '{mark.args[0]}' extra ({missing[0]} is not installed)"
                    )
                )


def _missing_packages(extra: str) -> list[str]:
    import importlib.util

    from culturebench.extras import EXTRA_OF

    return [p for p, e in EXTRA_OF.items() if e == extra and importlib.util.find_spec(p) is None]


# culturebench's own lines for a missing package (a backend's, or any command's)
NEEDS_LINE = r"needs ([\w, ]+), which is not installed: pip install 'culturebench\[(\w+)\]'"
NO_MODULE = r"No module named '(\w+)"


def needed_extra(exc: BaseException | None, text: str) -> tuple[str, str] | None:
    """(extra, package) when a test failed for a missing optional package: the exception (or
    one it was raised from), or the failure's text (a CLI result holding the exception, a
    command's one line in an assertion's message)."""
    import re

    from culturebench.extras import EXTRA_OF, missing_extra

    found = missing_extra(exc)
    if found is not None:
        return found
    match = re.search(NEEDS_LINE, text)
    if match:
        return match.group(2), match.group(1)
    for name in re.findall(NO_MODULE, text):
        if name in EXTRA_OF:
            return EXTRA_OF[name], name
    return None


def _really_missing(needed: tuple[str, str] | None) -> bool:
    """Only a package that is truly not importable turns a failure into a skip (a full
    install never skips for this reason)."""
    import importlib.util

    if needed is None:
        return False
    return any(importlib.util.find_spec(p.strip()) is None for p in needed[1].split(","))


def _as_skip(report, where: str, needed: tuple[str, str]) -> None:
    extra, package = needed
    report.outcome = "skipped"
    report.longrepr = (where, 0, f"Skipped: needs the '{extra}' extra ({package} is not installed)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A test that fails only because an optional extra is not installed is a skip naming the
    extra (a core-plus-dev install runs the rest)."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.excinfo is not None:
        needed = needed_extra(call.excinfo.value, str(report.longrepr))
        if _really_missing(needed):
            _as_skip(report, str(item.path), needed)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """A test module that cannot be imported without an optional extra is skipped, not an
    error."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and isinstance(collector, pytest.Module):
        needed = needed_extra(None, str(report.longrepr))
        if _really_missing(needed):
            _as_skip(report, str(collector.path), needed)
