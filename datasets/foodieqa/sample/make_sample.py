"""Write the FoodieQA sample shipped with culturebench (this folder): 8 multi-image, 8
single-image and 8 text questions made up for culturebench, over 8 pictures drawn here with
PIL, in the upstream layout the builder reads (``images/``, ``mivqa_tidy.json``,
``sivqa_tidy.json``, ``textqa_tidy.json``). Nothing comes from the gated FoodieQA data.

    python datasets/foodieqa/sample/make_sample.py

The questions, answers and pictures are dedicated to the public domain (CC0 1.0), see SAMPLE.md.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
# (Chinese name, English name, cuisine, region)
DISHES = [
    ("宫保鸡丁", "Kung Pao chicken", "川菜", "四川"),
    ("小笼包", "xiaolongbao", "苏菜", "上海"),
    ("北京烤鸭", "Peking duck", "京菜", "北京"),
    ("肠粉", "rice noodle roll", "粤菜", "广东"),
    ("兰州拉面", "Lanzhou beef noodles", "西北菜", "甘肃"),
    ("剁椒鱼头", "fish head with chillies", "湘菜", "湖南"),
    ("锅包肉", "sweet and sour pork", "东北菜", "黑龙江"),
    ("佛跳墙", "Buddha jumps over the wall", "闽菜", "福建"),
]
REGIONS = ["四川", "上海", "北京", "广东", "甘肃", "湖南", "黑龙江", "福建"]
REGIONS_EN = ["Sichuan", "Shanghai", "Beijing", "Guangdong", "Gansu", "Hunan", "Heilongjiang", "Fujian"]


def draw_dish(path: Path, seed: int, label: str) -> None:
    """A plate seen from above: a white rim, a coloured dish with a few pieces on it, and the
    dish's English name under it (PIL's built-in font has no Chinese)."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    img = Image.new("RGB", (160, 120), tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(img)
    for _ in range(4):  # the table: a few broad stripes
        y = rng.randrange(0, 100)
        stripe = tuple(rng.randrange(256) for _ in range(3))
        draw.rectangle((0, y, 160, y + rng.randrange(6, 30)), fill=stripe)
    x0, y0 = rng.randrange(0, 60), rng.randrange(0, 20)
    draw.ellipse((x0, y0, x0 + 100, y0 + 82), fill=(250, 250, 246), outline=(120, 120, 120))
    base = tuple(rng.randrange(40, 230) for _ in range(3))
    draw.ellipse((x0 + 14, y0 + 12, x0 + 86, y0 + 70), fill=base)
    for _ in range(9):
        x, y = x0 + rng.randrange(16, 70), y0 + rng.randrange(14, 56)
        size = rng.randrange(6, 20)
        piece = tuple(rng.randrange(256) for _ in range(3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)((x, y, x + size, y + size), fill=piece)
    draw.rectangle((0, 100, 160, 120), fill=(245, 240, 230))
    draw.text((6, 104), label[:26], fill=(40, 30, 20))
    img.save(path, format="PNG", optimize=True)


def _options(correct: int, pool: list[str], k: int) -> list[str]:
    """Three other options of ``pool`` with the correct one at position ``k``."""
    others = [p for i, p in enumerate(pool) if i != correct]
    out = [others[(correct + j) % len(others)] for j in range(3)]
    out.insert(k, pool[correct])
    return out


def write_sample(root: Path = HERE) -> Path:
    (root / "images").mkdir(parents=True, exist_ok=True)
    files = []
    for i, (_, en, _, _) in enumerate(DISHES):
        name = f"images/sample_dish_{i:02d}.png"
        draw_dish(root / name, seed=i, label=en)
        files.append(name)
    mivqa, sivqa, textqa = [], [], []
    for i, (zh, en, cuisine, region) in enumerate(DISHES):
        k = i % 4  # the correct slot cycles A-D
        picks = [files[(i + j) % len(files)] for j in range(1, 4)]
        picks.insert(k, files[i])
        region_idx = REGIONS.index(region)
        mivqa.append(
            {
                "question": f"哪一道菜是{zh}？",
                "choices": "",
                "answer": str(k),
                "question_type": "food-type",
                "question_id": f"sample-m{i}",
                "ann_group": "synthetic",
                "images": picks,
                "question_en": f"Which dish is {en}?",
            }
        )
        sivqa.append(
            {
                "question": "以下菜品是哪个地区的特色菜？",
                "choices": _options(region_idx, REGIONS, k),
                "answer": str(k),
                "question_type": "region",
                "food_name": zh,
                "question_id": f"sample-s{i}",
                "food_meta": {
                    "main_ingredient": ["synthetic"],
                    "id": i,
                    "food_name": zh,
                    "food_type": cuisine,
                    "food_location": region,
                    "food_file": files[i],
                },
                "question_en": "Which region is this food a specialty of?",
                "choices_en": _options(region_idx, REGIONS_EN, k),
            }
        )
        textqa.append(
            {
                "question": f"{zh}是哪个地区的特色菜？",
                "choices": _options(region_idx, REGIONS, k),
                "answer": str(k),
                "question_type": "region-2",
                "food_name": zh,
                "cuisine_type": cuisine,
                "question_id": f"sample-t{i}",
                "question_en": f"Which region is {en} a specialty of?",
                "choices_en": _options(region_idx, REGIONS_EN, k),
            }
        )
    for name, data in (("mivqa_tidy.json", mivqa), ("sivqa_tidy.json", sivqa), ("textqa_tidy.json", textqa)):
        (root / name).write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return root


if __name__ == "__main__":
    print(write_sample())
