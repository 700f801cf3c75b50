"""Issue 40 (first part): credentials never reach a file, engine options declare their ranges,
and a flag and a --model-arg that disagree are an error. Refusals are one line, echo no key and
leave the output folder as it was."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.atomic import write_text_atomic
from culturebench.cli import app
from culturebench.errors import UsageError
from culturebench.eval.backends import check_model_args, make_backend
from culturebench.secrets import SecretRefused, key_format

pytestmark = pytest.mark.unit

KEYS = {
    "openai": "sk-proj-" + "Ab3dE" * 8,
    "huggingface": "hf_" + "aBcD3fGh1" * 4,
    "github": "ghp_" + "x9Y8z7W6v5" * 4,
    "aws": "AKIA" + "ABCDEFGHIJKLMNOP",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}


def _run(args: list[str]):
    return CliRunner().invoke(app, args, terminal_width=200)


@pytest.mark.parametrize("kind", sorted(KEYS))
def test_every_key_format_is_recognised(kind: str) -> None:
    assert key_format(f"the value was {KEYS[kind]} here") is not None
    assert key_format("OPENAI_API_KEY") is None and key_format("sk-learn is a library") is None


@pytest.mark.integration
@pytest.mark.parametrize("kind", sorted(KEYS))
def test_a_key_given_as_api_key_env_is_refused_unechoed(kind: str, wwd_release, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = _run(
        ["eval", "run", "wwd", "--task", "country", "--backend", "openai", "--model", "m",
         "--base-url", "http://127.0.0.1:9/v1", "--model-arg", f"api_key_env={KEYS[kind]}",
         "--local", str(wwd_release.folder), "--limit", "2", "--out", str(out)]
    )  # fmt: skip
    assert result.exit_code != 0
    assert "api_key_env" in result.output and "NAME of the environment variable" in result.output
    assert KEYS[kind] not in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_the_value_of_a_key_variable_is_refused_as_a_name(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "plainsecretvalue42")
    with pytest.raises(UsageError, match="NAME of the environment variable") as caught:
        check_model_args("openai", [("api_key_env", "plainsecretvalue42")])
    assert "plainsecretvalue42" not in str(caught.value)
    assert check_model_args("openai", [("api_key_env", "MY_KEY")]) == {"api_key_env": "MY_KEY"}


@pytest.mark.parametrize("name", ["run.json", "results.json", "reproduce.json", "plan.json"])
def test_run_records_holding_a_key_are_never_written(name: str, tmp_path: Path) -> None:
    from culturebench.eval.run_folder import write_json

    path = tmp_path / name
    with pytest.raises(SecretRefused, match="refusing to write") as caught:
        write_json(path, {"model": {"model_args": {"note": KEYS["openai"]}}})
    assert KEYS["openai"] not in str(caught.value)
    assert not path.exists() and not list(path.parent.glob(f".{path.name}.*"))


def test_a_release_may_hold_signed_urls_of_its_upstream_data(tmp_path: Path) -> None:
    """Key formats are refused in run records, not in what a release copies from upstream (the
    WWD sheet links images through signed URLs that carry a JSON Web Token)."""
    write_text_atomic(tmp_path / "build_report.json", '{"url": "https://x/?t=' + KEYS["jwt"] + '"}')


def test_a_key_variables_value_is_never_written_even_in_samples(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_TOKEN", "my-very-own-token-1234")
    samples = tmp_path / "samples.jsonl"
    samples.write_text("before\n", encoding="utf-8")
    with pytest.raises(SecretRefused, match=r"\$HF_TOKEN"):
        write_text_atomic(samples, '{"output": "the token is my-very-own-token-1234"}\n')
    assert samples.read_text(encoding="utf-8") == "before\n"  # left as it was
    # a key format inside a model's output is the model's text, kept
    write_text_atomic(samples, '{"output": "use sk-' + "x" * 30 + '"}\n')


@pytest.mark.parametrize(
    ("backend", "key", "value", "accepted"),
    [
        ("openai", "concurrency", "0", "an integer >= 1"),
        ("openai", "timeout", "-1", "a finite number >= 0.001"),
        ("openai", "timeout", "nan", "a finite number"),
        ("openai", "timeout", "inf", "a finite number"),
        ("openai", "max_retries", "-1", "an integer >= 0"),
        ("transformers", "batch_size", "0", "an integer >= 1"),
        ("transformers", "batch_size", "-1", "an integer >= 1"),
        ("vllm", "chunk_size", "0", "an integer >= 1"),
        ("vllm", "gpu_memory_utilization", "2", "<= 1"),
        ("vllm", "tensor_parallel_size", "0", "an integer >= 1"),
    ],
)
def test_options_out_of_range_are_one_line(backend: str, key: str, value: str, accepted: str) -> None:
    with pytest.raises(UsageError) as caught:
        check_model_args(backend, [(key, value)])
    message = str(caught.value)
    assert f"--model-arg {key}={value}" in message and accepted in message and "\n" not in message


def test_in_range_options_pass() -> None:
    got = check_model_args("openai", [("concurrency", "1"), ("timeout", "0.5"), ("max_retries", "0")])
    assert got == {"concurrency": 1, "timeout": 0.5, "max_retries": 0} and not math.isnan(got["timeout"])


def test_a_flag_and_a_model_arg_that_disagree_are_an_error() -> None:
    with pytest.raises(UsageError, match="--model-arg base_url and --base-url give two different values"):
        make_backend(
            "openai",
            "m",
            base_url="http://127.0.0.1:8001/v1",
            model_args={"base_url": "http://127.0.0.1:8002/v1"},
        )
    # the same value twice, or a flag left at its default, is no conflict
    make_backend(
        "openai",
        "m",
        base_url="http://127.0.0.1:8001/v1",
        model_args={"base_url": "http://127.0.0.1:8001/v1"},
    )
    make_backend("openai", "m", concurrency=4, model_args={"concurrency": 2})
