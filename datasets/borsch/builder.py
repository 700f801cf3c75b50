"""BORSCH builder: ``RU_DATA.xlsx``, ``UK_DATA.xlsx``, ``PARALLEL_RU_UK.xlsx`` and the image
manifest -> configs ``ru``, ``uk`` and ``parallel`` (split ``test``).

Upstream quirks are handled on purpose and logged (see ``shared/upstream/README.md``):

============================  ===========================================================
code                          what is done
============================  ===========================================================
empty_country_token           ``"ES, MX, "``: the empty token is dropped
country_token_whitespace      ``"UA "``: the token is stripped
duplicate_country             a code repeated in one list is kept once
duplicate_name                same normalised name under two IDs: both rows kept
name_whitespace               ``"СТИР-ФРАИ\\t"``: outer whitespace removed from ``name``
mixed_script_name             ``"ТЭМПYPА"`` (Latin Y, P): kept in ``name``, fixed in
                              ``name_normalized``
apostrophe_variant            ``’`` vs ``'``: unified in ``name_normalized``
parallel_one_side             ``"212,"`` / ``",411"``: the missing side is null
parallel_name_differs         parallel name differs from the linked row's name: both kept
parallel_origins_differ       parallel origins differ from the linked row's: each table
                              keeps its own (the parallel set was re-validated upstream)
language_row_linked_twice     one ``ru``/``uk`` row linked by two parallel rows: kept
image_missing_checksum        LFS pointer missing from the snapshot: sha256/size null
more_images_than_documented   more than 5 images for one dish: all kept
duplicate_image_in_dish       same bytes twice for one dish: both kept (deduplicated in
                              ``parallel``'s union)
dish_without_images           no image rows: empty ``images`` list
============================  ===========================================================

Hard errors (a :class:`~culturebench.errors.SourceError` naming file, row and field):
unreadable workbook, missing column, non-integer or duplicate ID, empty name, no valid
country, unknown ISO code, unknown provenance, a parallel ID that points nowhere, an image
row that belongs to no dish.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any

from culturebench.builders.base import DatasetBuilder
from culturebench.builders.sources import SourceSet
from culturebench.builders.tables import SourceRow, parse_int, read_csv, read_xlsx
from culturebench.buildlog import BuildLog
from culturebench.countries import country_names, is_iso_alpha2
from culturebench.errors import Location, SourceError
from culturebench.text import file_name_problem, has_mixed_script, name_problem, normalize_name

LANGUAGES = ("ru", "uk")
NAME_COLUMN = {"ru": "Dish", "uk": "Dish Name"}
ID_COLUMN = "ID"
COUNTRY_COLUMN = "Countries of Origin"
SOURCE_COLUMN = "Source"
PARALLEL_COLUMNS = ["RU_NAME", "UK_NAME", "ID RU,UK", COUNTRY_COLUMN]
IMAGE_COLUMNS = ["language", "dish_id", "file", "sha256", "size", "path"]
PROVENANCE = re.compile(r"^(wikidata|bootstrap-\d+)$")
PAIR = re.compile(r"^\s*(\d*)\s*,\s*(\d*)\s*$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
DOCUMENTED_MAX_IMAGES = 5
UNKNOWN_LICENSE = "unknown"


def language_ref(language: str, upstream_id: int) -> str:
    """Stable id of a language row: ``ru-178``."""
    return f"{language}-{upstream_id}"


def parallel_ref(ru_id: int | None, uk_id: int | None) -> str:
    """Stable id of a parallel row: ``par-ru178-uk134``, ``par-ru212``, ``par-uk411``."""
    parts = [f"ru{ru_id}" if ru_id is not None else "", f"uk{uk_id}" if uk_id is not None else ""]
    return "par-" + "-".join(p for p in parts if p)


class BorschBuilder(DatasetBuilder):
    """Builds the BORSCH release from its upstream tables."""

    CODE_VERSION = "1.0"

    # ------------------------------------------------------------------ parsing helpers
    def _int(self, row: SourceRow, field: str, value: Any) -> int:
        return parse_int(value, row.loc(field), "an integer ID" if field != "size" else "a size in bytes")

    def parse_origins(self, row: SourceRow, field: str, log: BuildLog) -> list[str]:
        """Parse a comma-separated ISO 3166-1 alpha-2 list, logging each quirk met."""
        raw = row.values.get(field)
        if raw is None or not str(raw).strip():
            raise SourceError(row.loc(field), "no country of origin given")
        text = str(raw)
        if text != text.strip():
            log.quirk(
                "country_token_whitespace",
                f"outer whitespace in {text!r}",
                action="tokens stripped",
                where=row.loc(field),
                severity="info",
            )
        codes: list[str] = []
        for token in text.split(","):
            code = token.strip()
            if not code:
                log.quirk(
                    "empty_country_token",
                    f"empty token in {text!r}",
                    action="token dropped",
                    where=row.loc(field),
                )
                continue
            if not is_iso_alpha2(code):
                raise SourceError(
                    row.loc(field), f"unknown ISO 3166-1 alpha-2 country code {code!r} in {text!r}"
                )
            if code in codes:
                log.quirk(
                    "duplicate_country",
                    f"{code!r} repeated in {text!r}",
                    action="kept once",
                    where=row.loc(field),
                )
                continue
            codes.append(code)
        if not codes:
            raise SourceError(row.loc(field), f"no valid country code in {text!r}")
        return codes

    def parse_name(self, row: SourceRow, field: str, log: BuildLog) -> str:
        raw = row.values.get(field)
        if raw is None or not str(raw).strip():
            raise SourceError(row.loc(field), "empty dish name")
        name = str(raw)
        problem = name_problem(name)
        if problem:
            raise SourceError(row.loc(field), problem)
        if name != name.strip():
            log.quirk(
                "name_whitespace",
                f"outer whitespace in {name!r}",
                action="stripped from name",
                where=row.loc(field),
            )
            name = name.strip()
        if any(has_mixed_script(w) for w in name.split()):
            log.quirk(
                "mixed_script_name",
                f"Latin look-alike letters in {name!r} (normalised: {normalize_name(name)!r})",
                action="kept in name; letters fixed in name_normalized",
                where=row.loc(field),
            )
        if any(ch in name for ch in "’ʼ‘`"):
            log.quirk(
                "apostrophe_variant",
                f"non-ASCII apostrophe in {name!r}",
                action="unified to ' in name_normalized",
                where=row.loc(field),
                severity="info",
            )
        return name

    # ------------------------------------------------------------------ tables
    def read_language(self, language: str, sources: SourceSet, log: BuildLog) -> dict[int, dict[str, Any]]:
        """Rows of ``RU_DATA``/``UK_DATA`` keyed by upstream ID (images not attached yet)."""
        src = sources[language]
        name_col = NAME_COLUMN[language]
        rows = read_xlsx(src.path, [ID_COLUMN, name_col, COUNTRY_COLUMN, SOURCE_COLUMN], name=src.name)
        if not rows:
            raise SourceError(SourceRow(src.name, 2, {}).loc(), "no data rows under the header")
        out: dict[int, dict[str, Any]] = {}
        first_row: dict[int, int] = {}
        for row in rows:
            upstream_id = self._int(row, ID_COLUMN, row[ID_COLUMN])
            if upstream_id in out:
                raise SourceError(
                    row.loc(ID_COLUMN),
                    f"duplicate ID {upstream_id} (first used on row {first_row[upstream_id]})",
                )
            first_row[upstream_id] = row.row
            name = self.parse_name(row, name_col, log)
            origins = self.parse_origins(row, COUNTRY_COLUMN, log)
            provenance = str(row[SOURCE_COLUMN] or "").strip()
            if not PROVENANCE.match(provenance):
                raise SourceError(
                    row.loc(SOURCE_COLUMN),
                    f"unknown provenance {row[SOURCE_COLUMN]!r} (expected wikidata or bootstrap-N)",
                )
            out[upstream_id] = {
                "id": language_ref(language, upstream_id),
                "upstream_id": upstream_id,
                "name": name,
                "name_normalized": normalize_name(name),
                **self.origin_fields(origins),
                "provenance": provenance,
                "parallel_ids": [],
                "images": [],
                "_row": row.row,
            }
        self._report_duplicate_names(out, src.name, name_col, log)
        return out

    @staticmethod
    def origin_fields(origins: list[str]) -> dict[str, list[str]]:
        return {
            "origins": origins,
            "origin_names_en": country_names(origins, "en"),
            "origin_names_ru": country_names(origins, "ru"),
            "origin_names_uk": country_names(origins, "uk"),
        }

    @staticmethod
    def _report_duplicate_names(
        rows: dict[int, dict[str, Any]], file: str, name_column: str, log: BuildLog
    ) -> None:
        by_name: dict[str, list[int]] = defaultdict(list)
        for upstream_id, rec in rows.items():
            by_name[rec["name_normalized"]].append(upstream_id)
        for name, ids in sorted(by_name.items()):
            if len(ids) > 1:
                log.quirk(
                    "duplicate_name",
                    f"{name!r} appears under IDs {ids}",
                    action="all rows kept (distinct upstream dishes)",
                    where=Location(file, rows[ids[1]]["_row"], name_column),
                )

    def attach_images(
        self, tables: dict[str, dict[int, dict[str, Any]]], sources: SourceSet, log: BuildLog
    ) -> int:
        """Attach manifest image records to their dishes; return the number of images."""
        src = sources["images"]
        template = self.spec.upstream["image_url_template"]
        commit = self.spec.upstream["commit"]
        rows = read_csv(src.path, IMAGE_COLUMNS, name=src.name)
        for row in rows:
            language = (row["language"] or "").strip()
            if language not in LANGUAGES:
                raise SourceError(row.loc("language"), f"unknown language {language!r}")
            dish_id = self._int(row, "dish_id", row["dish_id"])
            dish = tables[language].get(dish_id)
            if dish is None:
                raise SourceError(
                    row.loc("dish_id"),
                    f"image row belongs to no dish: no {language} dish with ID {dish_id}",
                )
            problem = file_name_problem(row["file"] or "")
            if problem:
                raise SourceError(row.loc("file"), problem)
            expected_path = f"data/{language.upper()}/images/{dish_id}/{row['file']}"
            if row["path"] != expected_path:
                raise SourceError(
                    row.loc("path"),
                    f"path {row['path']!r} is not under the dish's folder ({expected_path!r})",
                )
            sha = (row["sha256"] or "").strip().lower() or None
            if sha is not None and not SHA256.match(sha):
                raise SourceError(row.loc("sha256"), f"not a sha256 hex digest: {row['sha256']!r}")
            size_raw = (row["size"] or "").strip()
            size = self._int(row, "size", size_raw) if size_raw else None
            if sha is None:
                log.quirk(
                    "image_missing_checksum",
                    f"{row['path']} has no sha256/size in the snapshot",
                    action="sha256 and size_bytes left null",
                    where=row.loc("sha256"),
                )
            known = self._known_licence(row)
            dish["images"].append(
                {
                    "image": None,
                    "file": row["file"],
                    "language": language,
                    "upstream_path": row["path"],
                    "url": template.format(commit=commit, path=row["path"]),
                    "sha256": sha,
                    "size_bytes": size,
                    "width": None,
                    "height": None,
                    "phash": None,
                    "dhash": None,
                    "status": "not_fetched",
                    "license": UNKNOWN_LICENSE,
                    "license_url": None,
                    "author": None,
                    "attribution": None,
                    "source_page": None,
                    **known,
                }
            )
        for language, table in tables.items():
            for dish in table.values():
                images = dish["images"]
                if not images:
                    log.quirk(
                        "dish_without_images",
                        f"{dish['id']} has no image rows",
                        action="images is an empty list",
                        where=Location(sources[language].name, dish["_row"]),
                        severity="info",
                    )
                if len(images) > DOCUMENTED_MAX_IMAGES:
                    log.quirk(
                        "more_images_than_documented",
                        f"{dish['id']} has {len(images)} images (paper: up to 5)",
                        action="all kept",
                        file=src.name,
                        field="dish_id",
                    )
                shas = Counter(i["sha256"] for i in images if i["sha256"])
                for sha, count in shas.items():
                    if count > 1:
                        log.quirk(
                            "duplicate_image_in_dish",
                            f"{dish['id']}: image {sha[:12]}… listed {count}x",
                            action="kept as listed; deduplicated in parallel",
                            file=src.name,
                            field="sha256",
                        )
        return len(rows)

    @staticmethod
    def _known_licence(row: SourceRow) -> dict[str, str]:
        """The licence columns a manifest may carry (``license``, ``author``, ``attribution``,
        ``source_page``; the shipped sample's drawn images have them, upstream's list does not):
        filled ones replace the defaults, so the image stage needs no Commons lookup for them."""
        return {
            column: str(row.values[column]).strip()
            for column in ("license", "author", "attribution", "source_page")
            if str(row.values.get(column) or "").strip()
        }

    def read_parallel(
        self, tables: dict[str, dict[int, dict[str, Any]]], sources: SourceSet, log: BuildLog
    ) -> list[dict[str, Any]]:
        src = sources["parallel"]
        rows = read_xlsx(src.path, PARALLEL_COLUMNS, name=src.name)
        if not rows:
            raise SourceError(SourceRow(src.name, 2, {}).loc(), "no data rows under the header")
        out: list[dict[str, Any]] = []
        seen: dict[str, int] = {}
        linked: dict[str, list[str]] = defaultdict(list)
        for row in rows:
            pair_raw = row["ID RU,UK"]
            match = PAIR.match(str(pair_raw if pair_raw is not None else ""))
            if not match or not (match.group(1) or match.group(2)):
                raise SourceError(
                    row.loc("ID RU,UK"),
                    f"expected 'RU_ID,UK_ID' with at least one side, got {pair_raw!r}",
                )
            ids = {
                "ru": int(match.group(1)) if match.group(1) else None,
                "uk": int(match.group(2)) if match.group(2) else None,
            }
            names = {
                "ru": self.parse_name(row, "RU_NAME", log),
                "uk": self.parse_name(row, "UK_NAME", log),
            }
            origins = self.parse_origins(row, COUNTRY_COLUMN, log)
            record: dict[str, Any] = {"id": parallel_ref(ids["ru"], ids["uk"])}
            if record["id"] in seen:
                raise SourceError(
                    row.loc("ID RU,UK"), f"duplicate pair {pair_raw!r} (first on row {seen[record['id']]})"
                )
            seen[record["id"]] = row.row
            missing = [lang for lang in LANGUAGES if ids[lang] is None]
            if missing:
                log.quirk(
                    "parallel_one_side",
                    f"{record['id']} has no {missing[0]} row ({pair_raw!r})",
                    action="the missing side's *_id, *_ref and provenance_* are null",
                    where=row.loc("ID RU,UK"),
                    severity="info",
                )
            images: list[dict[str, Any]] = []
            keys: set[str] = set()
            for lang in LANGUAGES:
                record[f"name_{lang}"] = names[lang]
                record[f"name_{lang}_normalized"] = normalize_name(names[lang])
                record[f"{lang}_id"] = ids[lang]
                record[f"{lang}_ref"] = None
                record[f"provenance_{lang}"] = None
                own_id = ids[lang]
                if own_id is None:
                    continue
                target = tables[lang].get(own_id)
                if target is None:
                    raise SourceError(
                        row.loc("ID RU,UK"),
                        f"{lang.upper()} ID {ids[lang]} points nowhere: no such ID in {sources[lang].name}",
                    )
                record[f"{lang}_ref"] = target["id"]
                record[f"provenance_{lang}"] = target["provenance"]
                target["parallel_ids"].append(record["id"])
                linked[target["id"]].append(record["id"])
                if target["name_normalized"] != record[f"name_{lang}_normalized"]:
                    log.quirk(
                        "parallel_name_differs",
                        f"{record['id']}: {lang.upper()} name {names[lang]!r} vs {target['name']!r} "
                        f"in {target['id']}",
                        action="both kept as published",
                        where=row.loc(f"{lang.upper()}_NAME"),
                        severity="info",
                    )
                if set(target["origins"]) != set(origins):
                    log.quirk(
                        "parallel_origins_differ",
                        f"{record['id']}: {origins} vs {target['origins']} in {target['id']}",
                        action="each table keeps its own origins",
                        where=row.loc(COUNTRY_COLUMN),
                        severity="info",
                    )
                for image in target["images"]:
                    key = image["sha256"] or image["upstream_path"]
                    if key not in keys:
                        keys.add(key)
                        images.append(image)
            record.update(self.origin_fields(origins))
            record["images"] = images
            out.append(record)
        for ref, parallel_ids in sorted(linked.items()):
            if len(parallel_ids) > 1:
                log.quirk(
                    "language_row_linked_twice",
                    f"{ref} is linked by {parallel_ids}",
                    action="all links kept",
                    file=src.name,
                    field="ID RU,UK",
                )
        return out

    # ------------------------------------------------------------------ entry point
    def generate(self, sources: SourceSet, log: BuildLog) -> dict[str, dict[str, list[dict]]]:
        tables = {lang: self.read_language(lang, sources, log) for lang in LANGUAGES}
        n_images = self.attach_images(tables, sources, log)
        parallel = self.read_parallel(tables, sources, log)
        out: dict[str, dict[str, list[dict]]] = {}
        for lang in LANGUAGES:
            rows = [tables[lang][k] for k in sorted(tables[lang])]
            for rec in rows:
                rec.pop("_row", None)
            out[lang] = {"test": rows}
        out["parallel"] = {"test": parallel}
        log.stats.update(self.statistics(out, n_images))
        return out

    @staticmethod
    def statistics(out: dict[str, dict[str, list[dict]]], n_images: int) -> dict[str, Any]:
        """Counts the card and the closing report show (per-country counts as in the paper:
        a dish with several origins counts once for each)."""
        stats: dict[str, Any] = {"image_rows": n_images}
        for config, splits in out.items():
            rows = splits["test"]
            per_country = Counter(code for r in rows for code in r["origins"])
            stats[config] = {
                "rows": len(rows),
                "images": sum(len(r["images"]) for r in rows),
                "dishes_with_images": sum(1 for r in rows if r["images"]),
                "multi_origin_dishes": sum(1 for r in rows if len(r["origins"]) > 1),
                "per_country": dict(sorted(per_country.items(), key=lambda kv: (-kv[1], kv[0]))),
            }
            if config in LANGUAGES:
                stats[config]["per_provenance"] = dict(sorted(Counter(r["provenance"] for r in rows).items()))
            else:
                stats[config]["both_sides"] = sum(
                    1 for r in rows if r["ru_id"] is not None and r["uk_id"] is not None
                )
                stats[config]["ru_only"] = sum(1 for r in rows if r["uk_id"] is None)
                stats[config]["uk_only"] = sum(1 for r in rows if r["ru_id"] is None)
        return stats
