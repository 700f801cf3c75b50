"""Regenerate ``datasets/borsch/sample/`` from the real upstream snapshot.

The sample holds real upstream rows (not invented ones): a few parallel rows of each link
kind, the language rows they link, and every row that shows a known quirk, so an offline
build without ``../shared`` still exercises the whole builder. Run from the repo root:

    python scripts/make_borsch_sample.py ../shared/upstream/borsch
"""

from __future__ import annotations

import csv
import datetime as dt
import subprocess
import sys
from pathlib import Path

from openpyxl import Workbook, load_workbook

from culturebench.inputs import csv_dict_reader

OUT = Path("datasets/borsch/sample")
FIXED_TIME = dt.datetime(2025, 1, 1)
EXTRA_RU = {900, 1, 2, 3}  # 900: empty country token
EXTRA_UK = {769, 1, 2, 3}  # 769: trailing space in the country list
QUIRK_NAMES = {"ПАЭЛЬЯ", "СТИР-ФРАИ\t", "ТЭМПYPА", "КУЛЕБ'ЯКА", "КУРАБ’Є"}


def rows(path: Path) -> list[tuple]:
    sheet = load_workbook(path, read_only=True).worksheets[0]
    return [tuple(r) for r in sheet.iter_rows(values_only=True)]


def save(path: Path, header: tuple, body: list[tuple]) -> None:
    wb = Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    ws.append(header)
    for r in body:
        ws.append(r)
    wb.properties.created = FIXED_TIME
    wb.properties.modified = FIXED_TIME
    wb.save(path)


def main(src: Path) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    ru, uk, par = rows(src / "RU_DATA.xlsx"), rows(src / "UK_DATA.xlsx"), rows(src / "PARALLEL_RU_UK.xlsx")
    both = [r for r in par[1:] if not r[2].startswith(",") and not r[2].endswith(",")][:10]
    ru_only = [r for r in par[1:] if r[2].endswith(",")][:3]
    uk_only = [r for r in par[1:] if r[2].startswith(",")][:3]
    chosen = both + ru_only + uk_only
    ru_ids = set(EXTRA_RU) | {int(r[2].split(",")[0]) for r in chosen if r[2].split(",")[0]}
    uk_ids = set(EXTRA_UK) | {int(r[2].split(",")[1]) for r in chosen if r[2].split(",")[1]}
    ru_ids |= {r[0] for r in ru[1:] if r[1] in QUIRK_NAMES}
    uk_ids |= {r[0] for r in uk[1:] if r[1] in QUIRK_NAMES}
    save(OUT / "RU_DATA.xlsx", ru[0], [r for r in ru[1:] if r[0] in ru_ids])
    save(OUT / "UK_DATA.xlsx", uk[0], [r for r in uk[1:] if r[0] in uk_ids])
    save(OUT / "PARALLEL_RU_UK.xlsx", par[0], chosen)
    with open(src / "images_manifest.csv", encoding="utf-8", newline="") as handle:
        reader = csv_dict_reader(handle)
        keep = [r for r in reader if int(r["dish_id"]) in (ru_ids if r["language"] == "ru" else uk_ids)]
        fields = reader.fieldnames
    with open(OUT / "images_manifest.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(keep)
    print(f"sample: {len(ru_ids)} ru, {len(uk_ids)} uk, {len(chosen)} parallel, {len(keep)} images")
    # the photos are not ours to ship: draw stand-ins and point the manifest at them
    subprocess.run([sys.executable, str(OUT / "make_images.py")], check=True)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/upstream/borsch"))
