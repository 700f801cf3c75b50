"""Measure a model as the answer reader (``--answer-reader model:...``) on the annotated answer
sets: how often it returns a reading in the asked form, how often that reading equals the
label, and how often it agrees with the rule reader.

    .venv/bin/python scripts/measure_model_reader.py                     # SmolLM2-135M, dev sets
    .venv/bin/python scripts/measure_model_reader.py --sets independent --limit 40
    .venv/bin/python scripts/measure_model_reader.py --backend vllm --model Qwen/Qwen2.5-7B-Instruct

Without ``--model`` the real SmolLM2-135M-Instruct weights the install fetches
(``scripts/fetch_smollm2.py``) are used through transformers (no constrained decoding there:
the JSON is asked for in the prompt and parsed leniently). Prints one table, per reader.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CRITERIA = ("authenticity", "sensitivity", "harmony")


def _items(sets: str, kind: str, limit: int) -> list[dict[str, Any]]:
    import yaml

    folders = {
        "dev": [ROOT / "tests/data/answers/committed/dev", ROOT / "tests/data/answers/committed/dev2"],
        "independent": [ROOT / "tests/data/answers/independent"],
    }[sets]
    stem = {"country": "country", "choice": "letters", "ratings": "ratings"}[kind]
    out: list[dict[str, Any]] = []
    for folder in folders:
        path = folder / f"{stem}.yaml"
        if path.is_file():
            out += yaml.safe_load(path.read_text(encoding="utf-8"))
    return out[:limit] if limit else out


def _rule(kind: str, item: dict[str, Any]) -> Any:
    from culturebench.datasets.ash.tasks import parse_ratings
    from culturebench.eval.answers.countries import read_countries
    from culturebench.eval.multiple_choice import extract_letter

    if kind == "country":
        return read_countries(item["text"], item.get("lang", "ru"), item.get("prompt")).value or []
    if kind == "choice":
        return extract_letter(
            item["text"], item.get("options"), [str(x) for x in item.get("labels") or "ABCD"]
        )
    return parse_ratings(item["text"])


def _label(kind: str, item: dict[str, Any]) -> Any:
    want = item.get("committed", item["expected"])
    if kind == "country":
        return [str(c) for c in want or []]
    if kind == "choice":
        return None if want is None else str(want)
    return want


def _same(kind: str, a: Any, b: Any) -> bool:
    return sorted(a or []) == sorted(b or []) if kind == "country" else a == b


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="transformers")
    parser.add_argument(
        "--model", default=None, help="default: SmolLM2-135M-Instruct (GGUF) from the install"
    )
    parser.add_argument("--sets", choices=("dev", "independent"), default="dev")
    parser.add_argument("--limit", type=int, default=60, help="answers per reader (0: all)")
    parser.add_argument("--out", type=Path, default=None, help="write every reading here (JSON Lines)")
    args = parser.parse_args()

    from culturebench.eval.answers import model_reader
    from culturebench.eval.backends import make_backend
    from culturebench.eval.backends.base import Request, SamplingParams

    model_args: dict[str, Any] = {}
    model = args.model
    if model is None:
        sys.path.insert(0, str(ROOT / "scripts"))
        from fetch_smollm2 import GGUF, default_dest

        model, model_args = str(default_dest()), {"gguf_file": GGUF}
    backend = make_backend(
        args.backend, model, sampling=SamplingParams(max_new_tokens=60), model_args=model_args
    )
    backend.load()
    lines = []
    print(f"reader model: {model} ({args.backend}); sets: {args.sets}")
    print("| reader | n | reading in the asked form | equals the label | agrees with the rules |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for kind in ("country", "choice", "ratings"):
        items = _items(args.sets, kind, args.limit)
        labels_of = [tuple(str(x) for x in it.get("labels") or "ABCD") for it in items]
        prompts = [
            model_reader.reading_prompt(
                kind,
                {"prompt": it.get("prompt", ""), "output": it["text"], "options": it.get("options")},
                labels,
            )
            for it, labels in zip(items, labels_of, strict=True)
        ]
        schemas = [json.dumps(model_reader.schema(kind, labels, CRITERIA)) for labels in labels_of]
        answers: list[str] = []
        for start in range(0, len(prompts), 8):
            batch = [
                Request(f"r{start + i}", p, json_schema=s)
                for i, (p, s) in enumerate(
                    zip(prompts[start : start + 8], schemas[start : start + 8], strict=True)
                )
            ]
            answers += backend.generate(batch)
        formed = right = agree = 0
        for item, labels, answer in zip(items, labels_of, answers, strict=True):
            reading = model_reader.parse_reading(kind, answer, labels, CRITERIA)
            ok = reading is not False
            formed += ok
            right += ok and _same(kind, reading, _label(kind, item))
            agree += ok and _same(kind, reading, _rule(kind, item))
            lines.append(
                json.dumps(
                    {"kind": kind, "id": item.get("id"), "answer": answer, "reading": reading},
                    ensure_ascii=False,
                )
            )
        n = len(items)
        cells = [f"{formed} ({formed / n:.0%})", f"{right} ({right / n:.0%})", f"{agree} ({agree / n:.0%})"]
        print(f"| {kind} | {n} | {' | '.join(cells)} |")
    if args.out:
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
