"""Benchmark: the answer parsers (country, option letter, judge ratings) on realistic and on
pathological outputs, and how their cost grows with the output's length.

For each parser and input shape, the output is repeated to 1x, 10x and 100x its length; the
parser's time is printed beside a baseline measured in the same run on the same text (one
``re.findall`` of a single-character class: the least any reader of the text does), as a
ratio. A linear parser keeps the ratio flat as the input grows; a parser that backtracks
shows it growing (before the fix, 50,000 spaces took the letter reader 112 s and 20,000
repeated mentions the rating reader 361 s).

    python benchmarks/bench_parsers.py
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

RUNS = 3
SIZES = (1, 10, 100)


def timed(fn: Callable[[], object]) -> float:
    """Min of :data:`RUNS` wall times (seconds)."""
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    from culturebench.datasets.ash.tasks import parse_ratings as ash_ratings
    from culturebench.eval.answers.countries import read_countries
    from culturebench.eval.country_extractor import default_extractor
    from culturebench.eval.multiple_choice import extract_letter
    from culturebench.eval.ratings import parse_ratings

    extractor = default_extractor()
    criteria = ("authenticity", "sensitivity", "harmony")
    options = ["Пушкин", "Лермонтов", "Гоголь", "Тургенев"]
    shapes: list[tuple[str, str, Callable[[str], object]]] = [
        ("mention", "Это блюдо из Украины, его любят в Польше. ", lambda t: extractor.extract(t, "ru")),
        ("country", "Это блюдо из Украины, его любят в Польше. ", lambda t: read_countries(t, "ru")),
        ("country", "Не Россия, а Беларусь; хотя нет, Литва. ", lambda t: read_countries(t, "ru")),
        ("country", "<think>Польша? Нет. Ответ: Украина. ", lambda t: read_countries(t, "ru")),
        ("country", "Узбекистн, Крым, Сычуань, корейское. ", lambda t: read_countries(t, "ru")),
        ("letters", "Вариант A неверен, вариант B тоже. ", lambda t: extract_letter(t, options)),
        ("letters", "Не Гоголя, а Лермонтова; второй вариант. ", lambda t: extract_letter(t, options)),
        ("letters", " " * 500, lambda t: extract_letter(t + "B", options)),
        ("letters", "(*" * 250, lambda t: extract_letter(t, options)),
        ("letters", "<answer>" * 60, lambda t: extract_letter(t, options)),
        ("ratings", "AUTHENTICITY: 4\nReason: 2 cups of rice.\n", lambda t: parse_ratings(t, criteria)),
        ("ratings", "authenticity " * 40, lambda t: parse_ratings(t, criteria)),
        ("ratings", '{"authenticity": 4, "harmony": 3,} | Sensitivity | 5 | 3 |\n', ash_ratings),
    ]
    baseline = re.compile(r"[A-D]")
    print(f"{'parser':8} {'input':24} {'x':>4} {'chars':>8} {'parser s':>10} {'base s':>10} {'ratio':>8}")
    for name, unit, parse in shapes:
        ratios = []
        for size in SIZES:
            text = unit * size
            ours = timed(lambda text=text, parse=parse: parse(text))
            base = max(timed(lambda text=text: baseline.findall(text)), 1e-7)
            ratios.append(ours / base)
            label = repr(unit[:20])
            cells = f"{size:>4} {len(text):>8} {ours:>10.5f} {base:>10.6f} {ours / base:>8.1f}"
            print(f"{name:8} {label:24} {cells}")
        growth = ratios[-1] / ratios[0] if ratios[0] else float("nan")
        print(f"{'':8} ratio at {SIZES[-1]}x / at 1x: {growth:.2f} (flat = linear)")


if __name__ == "__main__":
    main()
