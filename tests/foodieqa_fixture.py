"""A synthetic FoodieQA download in the exact upstream layout (``images/``,
``mivqa_tidy.json``, ``sivqa_tidy.json``, ``textqa_tidy.json``): our own drawn images and
questions, no upstream data. Answers are written as strings (as upstream) and as ints, to
exercise the normalisation."""

from __future__ import annotations

import json
import random
from pathlib import Path


def _shipped_sample_tables():
    """The dish and region tables of the shipped sample's generator
    (``datasets/foodieqa/sample/make_sample.py``): one list of made-up dishes for both."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "datasets" / "foodieqa" / "sample" / "make_sample.py"
    spec = importlib.util.spec_from_file_location("foodieqa_make_sample", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.DISHES, module.REGIONS, module.REGIONS_EN


DISHES, REGIONS, REGIONS_EN = _shipped_sample_tables()


def _photo(path: Path, seed: int) -> None:
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    img = Image.new("RGB", (96, 72), tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(img)
    for _ in range(6):
        x, y = rng.randrange(80), rng.randrange(60)
        box = (x, y, x + rng.randrange(10, 40), y + rng.randrange(8, 30))
        fill = tuple(rng.randrange(256) for _ in range(3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(box, fill=fill)
    img.save(path, format="JPEG", quality=90)


def _options(correct: int, pool: list[str], k: int) -> list[str]:
    others = [p for i, p in enumerate(pool) if i != correct][:3]
    out = others[:]
    out.insert(k, pool[correct])
    return out


def write_foodieqa(root: Path) -> Path:
    """Write the fixture under ``root`` and return it. 8 multi-image, 8 single-image and 8
    text questions (two text questions without English, as upstream text QA); six of the
    single-image questions name a web image (``food_meta.web_file``) under ``web/``."""
    (root / "images").mkdir(parents=True, exist_ok=True)
    files = []
    for i in range(len(DISHES)):
        name = f"images/dish_{i:02d}.jpg"
        _photo(root / name, seed=i)
        files.append(name)
    (root / "web").mkdir(exist_ok=True)
    for i in range(6):  # web images of six dishes (upstream: food_meta.web_file, for 171 of 256)
        _photo(root / "web" / f"dish_{i:02d}_web.jpg", seed=100 + i)
    mivqa, sivqa, textqa = [], [], []
    for i, (zh, en, cuisine, region) in enumerate(DISHES):
        k = i % 4
        picks = [files[(i + j) % len(files)] for j in range(1, 4)]
        picks.insert(k, files[i])
        mivqa.append(
            {
                "question": f"哪一道菜是{zh}？",
                "choices": "",
                "answer": str(k),
                "question_type": "food-type",
                "question_id": f"m{i}",
                "ann_group": "synthetic",
                "images": picks,
                "question_en": f"Which dish is {en}?",
            }
        )
        region_idx = REGIONS.index(region)
        sivqa.append(
            {
                "question": "以下菜品是哪个地区的特色菜？",
                "choices": _options(region_idx, REGIONS, k),
                "answer": k if i % 2 else str(k),
                "question_type": "region",
                "food_name": zh,
                "question_id": f"s{i}",
                "food_meta": {
                    "main_ingredient": ["synthetic"],
                    "id": i,
                    "food_name": zh,
                    "food_type": cuisine,
                    "food_location": region,
                    "food_file": files[i],
                    **({"web_file": f"web/dish_{i:02d}_web.jpg"} if i < 6 else {}),
                },
                "question_en": "Which region is this food a specialty of?",
                "choices_en": _options(region_idx, REGIONS_EN, k),
            }
        )
        text = {
            "question": f"{zh}是哪个地区的特色菜？",
            "choices": _options(region_idx, REGIONS, k),
            "answer": str(k),
            "question_type": "region-2",
            "food_name": zh,
            "cuisine_type": cuisine,
            "question_id": f"t{i}",
        }
        if i < 6:
            text["question_en"] = f"Which region is {en} a specialty of?"
            text["choices_en"] = _options(region_idx, REGIONS_EN, k)
        textqa.append(text)
    for name, data in (("mivqa_tidy.json", mivqa), ("sivqa_tidy.json", sivqa), ("textqa_tidy.json", textqa)):
        (root / name).write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    return root
