"""Backends own their options: every engine setting is declared (type, default, help, outputs
or speed), given as ``--model-arg``/``--model-args``, checked before any model loads, and
recorded; nothing reaches ``run.json`` that no engine saw."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.errors import UsageError
from culturebench.eval.backends import backend_names, backend_options, check_model_args, make_backend
from culturebench.eval.backends.options import split_model_args

pytestmark = pytest.mark.unit


def test_values_are_typed_by_the_backends_declaration() -> None:
    pairs = split_model_args(
        ['limit_mm_per_prompt={"image": 4}', "trust_remote_code=yes"],
        ["tensor_parallel_size=4,dtype=bfloat16,gpu_memory_utilization=0.9,max_model_len=8192"],
    )
    values = check_model_args("vllm", pairs)
    assert values == {
        "limit_mm_per_prompt": {"image": 4},
        "trust_remote_code": True,
        "tensor_parallel_size": 4,
        "dtype": "bfloat16",
        "gpu_memory_utilization": 0.9,
        "max_model_len": 8192,
    }
    # a JSON value with commas inside --model-args stays whole
    assert split_model_args([], ['limit_mm_per_prompt={"image": 4, "video": 0},seed=3']) == [
        ("limit_mm_per_prompt", '{"image": 4, "video": 0}'),
        ("seed", "3"),
    ]


@pytest.mark.parametrize(
    ("backend", "pairs", "message"),
    [
        (
            "vllm",
            [("tensor_parallel", "4")],
            r"backend vllm has no option 'tensor_parallel' \(its options: chunk_size,",
        ),
        ("transformers", [("tensor_parallel_size", "4")], "it is an option of vllm"),
        ("openai", [("device_map", "auto")], "it is an option of transformers"),
        ("vllm", [("max_model_len", "big")], "max_model_len=big: vllm expects an integer"),
        ("vllm", [("trust_remote_code", "maybe")], "expects true or false"),
        ("transformers", [("max_memory", "70GiB")], "expects JSON"),
        ("vllm", [("gpu_memory_utilization", "true")], "expects a number"),
        ("openai", [("batch_window", "soon")], "batch_window=soon: openai expects a duration such as 24h"),
        ("openai", [("batch_window", "0h")], "batch_window=0h: openai expects a duration such as 24h"),
        ("openai", [("batch_max_wait", "nan")], "batch_max_wait=nan: openai expects a finite number >= 0"),
        ("openai", [("batch_max_wait", "-1")], "batch_max_wait=-1: openai expects a finite number >= 0"),
        ("openai", [("batch_poll", "inf")], "batch_poll=inf: openai expects a finite number >= 0"),
    ],
)
def test_a_bad_key_or_value_is_one_line_naming_the_valid_keys(backend: str, pairs, message: str) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        check_model_args(backend, pairs)
    assert "\n" not in str(caught.value)


def test_a_key_given_twice_is_refused() -> None:
    with pytest.raises(UsageError, match="dtype: given twice"):
        split_model_args(["dtype=float16"], ["dtype=bfloat16"])


def test_every_backend_declares_its_options_with_help() -> None:
    names = backend_names()
    assert {"transformers", "vllm", "openai", "diffusers", "openai-images"} <= set(names)
    vllm = {o.name: o for o in backend_options("vllm")}
    wanted = {
        "tensor_parallel_size", "pipeline_parallel_size", "dtype", "quantization", "max_model_len",
        "gpu_memory_utilization", "trust_remote_code", "enforce_eager", "download_dir", "load_format",
        "limit_mm_per_prompt", "max_num_seqs", "kv_cache_dtype", "seed",
    }  # fmt: skip
    assert wanted <= set(vllm)
    assert vllm["dtype"].identity and not vllm["tensor_parallel_size"].identity
    transformers = {o.name for o in backend_options("transformers")}
    assert {
        "dtype",
        "device_map",
        "max_memory",
        "trust_remote_code",
        "attn_implementation",
        "batch_size",
        "gguf_file",
    } <= transformers
    assert {"base_url", "api_key_env", "concurrency", "timeout", "max_retries"} <= {
        o.name for o in backend_options("openai")
    }
    for name in names:
        assert all(o.help for o in backend_options(name))


def test_vllm_refuses_data_parallel_and_says_how_to_get_it() -> None:
    from culturebench.eval.backends.vllm_backend import VLLMBackend

    with pytest.raises(UsageError, match="vllm serve --data-parallel-size"):
        VLLMBackend("m", data_parallel_size=2)
    args = check_model_args("vllm", [("tensor_parallel_size", "4")])
    engine = VLLMBackend("m", **args)  # what make_backend does where vLLM is installed
    engine.model_args = args
    assert engine.engine_kwargs["tensor_parallel_size"] == 4 and engine.chunk_size(8) == 4096
    assert engine.describe()["runtime"] == {"tensor_parallel_size": 4}


def test_cli_refuses_before_any_model_loads(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["eval", "run", "borsch", "--task", "origin-qa", "--model", str(tmp_path / "no-model"),
         "--backend", "vllm", "--model-args", "tensor_parallel=4", "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 2
    assert (
        "backend vllm has no option 'tensor_parallel'" in result.output and "Traceback" not in result.output
    )
    assert not out.exists()
    task_option = CliRunner().invoke(
        app,
        ["eval", "run", "borsch", "--task", "origin-qa", "--model", str(tmp_path / "no-model"),
         "--option", "tensor_parallel_size=4", "--out", str(out)],
    )  # fmt: skip
    assert task_option.exit_code == 2
    assert "has no option 'tensor_parallel_size' (its options: config)" in task_option.output
    assert "--model-arg tensor_parallel_size" in task_option.output
    judge = CliRunner().invoke(
        app,
        ["eval", "score", "wwd", "--generations", str(tmp_path / "g.jsonl"), "--matcher", "llm",
         "--judge-model", "m", "--judge-model-arg", "tensor_parallel_size=2"],
    )  # fmt: skip
    assert (
        judge.exit_code == 2 and "backend transformers has no option 'tensor_parallel_size'" in judge.output
    )
    listed = CliRunner().invoke(app, ["eval", "backends", "vllm"], env={"COLUMNS": "200"})
    assert listed.exit_code == 0 and "tensor_parallel_size" in listed.output and "outputs" in listed.output


@pytest.mark.e2e
def test_output_options_are_identity_speed_options_are_not(
    tiny_model: Path, rubin_release, tmp_path: Path
) -> None:
    """dtype (outputs) is in the run's identity: another dtype is another run; batch_size
    (speed) is recorded as runtime and may change on resume."""
    from culturebench.eval.backends.base import SamplingParams
    from culturebench.eval.run_folder import RunMismatch
    from culturebench.eval.runner import run_eval

    def engine(*pairs: tuple[str, str]):
        return make_backend(
            "transformers", str(tiny_model), sampling=SamplingParams(max_new_tokens=4),
            model_args=check_model_args("transformers", list(pairs)),
        )  # fmt: skip

    out = tmp_path / "run"
    local = str(rubin_release.folder)
    run_eval("rubin", "mcqa", engine(("dtype", "float32"), ("batch_size", "4")), out, local=local, limit=3)
    model = json.loads((out / "run.json").read_text())["model"]
    assert model["model_args"] == {"dtype": "float32"} and model["runtime"] == {"batch_size": 4}
    again = run_eval(
        "rubin", "mcqa", engine(("dtype", "float32"), ("batch_size", "2")), out, local=local, limit=3
    )
    assert again["samples"] == 3  # resumed: the batch size changes only the speed
    with pytest.raises(RunMismatch, match="differs in: model"):
        run_eval("rubin", "mcqa", engine(("dtype", "bfloat16")), out, local=local, limit=3)


PLUGIN = '''
from culturebench.eval.backends.base import Backend
from culturebench.eval.backends.options import BackendOption


class EchoBackend(Backend):
    """Answers every prompt with its last word (a backend from another package)."""

    name = "echo"
    OPTIONS = (BackendOption("suffix", "str", "", "Appended to every answer.", identity=True),)

    def __init__(self, model, *, revision=None, sampling=None, suffix=""):
        super().__init__(model, revision=revision, sampling=sampling)
        self.suffix = suffix

    def generate(self, requests):
        return [r.prompt.split()[-1] + self.suffix for r in requests]
'''


def install_plugin(tmp_path: Path, monkeypatch, module: str, code: str, backends: dict[str, str]) -> None:
    """A separate package ``module`` (on sys.path, with a .dist-info) registering ``backends``
    (name -> class in the module) through the ``culturebench.backends`` entry points only."""
    site = tmp_path / "site"
    (site / module).mkdir(parents=True)
    (site / module / "__init__.py").write_text(code)
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n")
    lines = "".join(f"{name} = {module}:{cls}\n" for name, cls in backends.items())
    (info / "entry_points.txt").write_text("[culturebench.backends]\n" + lines)
    monkeypatch.syspath_prepend(str(site))
    sys.modules.pop(module, None)


def test_a_separate_package_adds_a_backend_with_an_entry_point(tmp_path: Path, monkeypatch) -> None:
    install_plugin(tmp_path, monkeypatch, "echo_backend", PLUGIN, {"echo": "EchoBackend"})
    assert "echo" in backend_names()
    from culturebench.eval.backends.base import Request

    engine = make_backend("echo", "none", model_args=check_model_args("echo", [("suffix", "!")]))
    assert engine.generate([Request("a", "name the dish борщ")]) == ["борщ!"]
    assert engine.describe()["model_args"] == {"suffix": "!"}
    with pytest.raises(UsageError, match="backend echo has no option 'dtype'"):
        check_model_args("echo", [("dtype", "float16")])


def test_a_refused_engine_setting_says_what_to_do_from_the_command_line() -> None:
    """vLLM's data_parallel_size is refused with the way to get data parallelism, at the
    command line's check (before any engine) as in the constructor."""
    result = CliRunner().invoke(
        app,
        ["eval", "run", "borsch", "--task", "origin-qa", "--backend", "vllm", "--model", "m",
         "--model-arg", "data_parallel_size=2"],
    )  # fmt: skip
    assert result.exit_code == 2 and "vllm serve --data-parallel-size" in result.output


def test_the_image_limit_of_a_prompt_follows_limit_mm_per_prompt() -> None:
    from culturebench.eval.backends.base import Request
    from culturebench.eval.backends.vllm_backend import VLLMBackend

    engine = VLLMBackend("m", limit_mm_per_prompt={"image": 2})
    with pytest.raises(ValueError, match="more than 2 images"):
        engine.conversations([Request("x", "?", (b"a", b"b", b"c"))])


ENDPOINT_PLUGIN = '''
from culturebench.eval.backends.base import Backend
from culturebench.eval.backends.image_base import ImageBackend, png_bytes


class EndpointEcho(Backend):
    """A backend on an endpoint from another package: it declares --base-url, and answers
    with the URL it was given (so the test sees the flag arrive)."""

    name = "endpoint-echo"
    SUMMARY = "answers with its base URL"
    SHARED_FLAGS = ("base_url",)

    def __init__(self, model, *, revision=None, sampling=None, base_url=None):
        super().__init__(model, revision=revision, sampling=sampling)
        self.base_url = base_url

    def generate(self, requests):
        return [f"Nigeria via {self.base_url}" for _ in requests]


class FlatImages(ImageBackend):
    """A text-to-image backend from another package: grey squares."""

    name = "flat-images"
    SUMMARY = "grey squares"

    def generate_images(self, requests):
        from PIL import Image

        return [png_bytes(Image.new("RGB", (8, 8), (128, 128, 128))) for _ in requests]
'''


@pytest.fixture
def endpoint_plugin(tmp_path: Path, monkeypatch) -> None:
    """A text backend that takes --base-url and a text-to-image backend, from a plugin."""
    backends = {"endpoint-echo": "EndpointEcho", "flat-images": "FlatImages"}
    install_plugin(tmp_path, monkeypatch, "endpoint_echo", ENDPOINT_PLUGIN, backends)


@pytest.mark.integration
def test_a_plugin_backend_gets_the_flags_it_declares_from_the_cli(
    endpoint_plugin, wwd_release, tmp_path: Path
) -> None:
    """No edit of culturebench: the plugin's declaration is read for its kind, its flags and
    `eval backends`; --base-url reaches it; a flag it does not declare is refused."""
    from culturebench.eval.backends import backend_names, make_image_backend, shared_flags

    assert "endpoint-echo" in backend_names("text") and "flat-images" in backend_names("image")
    assert shared_flags("endpoint-echo") == ("base_url",)
    out = tmp_path / "run"
    args = ["eval", "run", "wwd", "--task", "country", "--backend", "endpoint-echo", "--model", "m",
            "--local", str(wwd_release.folder), "--limit", "2"]  # fmt: skip
    result = CliRunner().invoke(app, [*args, "--base-url", "http://127.0.0.1:9/v1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    outputs = [json.loads(line)["output"] for line in (out / "samples.jsonl").read_text().splitlines()]
    assert outputs and all(o == "Nigeria via http://127.0.0.1:9/v1" for o in outputs)
    refused = CliRunner().invoke(app, [*args, "--concurrency", "9", "--out", str(tmp_path / "other")])
    assert (
        refused.exit_code == 2 and "--concurrency does not apply to --backend endpoint-echo" in refused.output
    )
    listed = CliRunner().invoke(app, ["eval", "backends", "endpoint-echo"])
    assert listed.exit_code == 0 and "plugin" in listed.output and "--base-url" in listed.output
    images = make_image_backend("flat-images", "m")
    assert images.generate_images([]) == [] and images.output_kind == "image"


def test_no_backend_is_named_outside_the_backend_package() -> None:
    """Help, messages, flag forwarding and records read the backends' declarations: no string
    outside eval/backends/ is a backend's name, except where it names the library of the same
    name (its logs quietened, its version recorded, the extra that installs it)."""
    import ast

    from culturebench.eval.backends import backend_names

    repo = Path(__file__).resolve().parent.parent
    libraries = {  # (file, name): the Python package, not the backend
        ("culturebench/cli/application.py", "transformers"),
        ("culturebench/cli/application.py", "diffusers"),
        ("eval/runner.py", "transformers"),
        ("eval/harness/logs.py", "transformers"),
    }
    names = set(backend_names(plugins=False))
    found = []
    for root in ("culturebench", "eval", "builders", "validation", "cards", "datasets"):
        for path in (repo / root).rglob("*.py"):
            rel = path.relative_to(repo).as_posix()
            if rel.startswith("eval/backends/") or rel == "culturebench/extras.py":  # packages, by name
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Constant)
                    and node.value in names
                    and (rel, node.value) not in libraries
                ):
                    found.append(f"{rel}:{node.lineno} {node.value!r}")
    assert not found, found


def test_a_missing_extra_is_one_line_naming_it(tmp_path: Path) -> None:
    """A command that needs a package of an extra that is not installed says which extra to
    install (torch hidden from a subprocess), never a bare ModuleNotFoundError."""
    import subprocess

    code = (
        "import sys; sys.modules['torch'] = None\n"  # an import of torch now fails
        "from culturebench.cli import main\n"
        f"sys.argv = ['culturebench', 'eval', 'tiny-model', {str(tmp_path / 'tiny')!r}]\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines == ["error: this needs torch, which is not installed: pip install 'culturebench[eval]'"]
    assert not (tmp_path / "tiny").exists()
