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


@pytest.fixture(scope="module")
def rubin_release(tmp_path_factory: pytest.TempPathFactory):
    from culturebench.builders import get_builder

    return get_builder("rubin").build(out_root=tmp_path_factory.mktemp("rubin"))


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


def test_a_separate_package_adds_a_backend_with_an_entry_point(tmp_path: Path, monkeypatch) -> None:
    site = tmp_path / "site"
    (site / "echo_backend").mkdir(parents=True)
    (site / "echo_backend" / "__init__.py").write_text(PLUGIN)
    info = site / "echo_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[culturebench.backends]\necho = echo_backend:EchoBackend\n")
    monkeypatch.syspath_prepend(str(site))
    sys.modules.pop("echo_backend", None)
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
