"""World Wide Dishes builder: the upstream CSV (765 dishes, 25 columns) -> configs `default`
and `country_split` (the paper's recommended 50/50 split per country).

Multi-valued fields come as Python-list strings (``['lunch', 'dinner']``), comma lists or
``;`` lists; each is parsed into a list whichever spelling it uses. Contributor country
names are kept verbatim and mapped to ISO 3166 where one exists (sub-national and disputed
names flagged, never dropped). Every irregularity is recorded in the build log.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections import Counter, defaultdict
from functools import cached_property
from typing import Any

import pycountry

from culturebench.builders.base import DatasetBuilder
from culturebench.builders.sources import SourceSet
from culturebench.builders.tables import SourceRow, parse_int, read_csv
from culturebench.buildlog import BuildLog
from culturebench.countries import is_iso_alpha2
from culturebench.errors import Location, SourceError
from culturebench.text import name_problem
from culturebench.yamlio import load_yaml

COLUMNS = [
    "id",
    "local_name",
    "english_name",
    "language",
    "language_code",
    "countries",
    "continent",
    "regions",
    "cultures",
    "time_of_day",
    "time_of_day_more",
    "type_of_dish",
    "type_of_dish_more",
    "utensils",
    "drink",
    "occasions",
    "occasions_more",
    "ingredients",
    "recipe",
    "more_details",
    "public_cc_image_url",
    "public_cc_image_caption",
    "uploaded_image_name",
    "uploaded_image_url",
    "uploaded_image_caption",
]
NO_CC_IMAGE = "no cc images available"
IMAGE_FIELDS = (
    "image",
    "sha256",
    "width",
    "height",
    "phash",
    "dhash",
    "status",
    "license",
    "license_url",
    "author",
    "attribution",
    "source_page",
)
CONTRIBUTOR_LICENSE = "CC-BY-4.0"  # contributor photos are shared with consent under the dataset's CC BY 4.0


def _link(
    kind: str, url: str | None, caption: str | None, file_name: str | None, status: str
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "kind": kind,
        "url": url,
        "caption": caption,
        "file_name": file_name,
        "license_status": status,
        **dict.fromkeys(IMAGE_FIELDS),
    }
    if kind != "recipe" and url and url.startswith("http"):
        record["status"] = "not_fetched"
        record["license"] = CONTRIBUTOR_LICENSE if kind == "contributor_photo" else "unknown"
        if kind == "contributor_photo":
            record["attribution"] = "World Wide Dishes contributor (shared with consent)"
    return record


URL = re.compile(r"(?:https?://|data:image/)\S+")
SPLIT_SEED = "wwd-country-split-v1"


def parse_multi(value: str) -> list[str]:
    """A multi-valued cell as a list: Python-list strings, ``;`` lists or comma lists."""
    text = (value or "").strip()
    if not text:
        return []
    if text.startswith("[") and text.endswith("]"):
        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            parsed = None
        if isinstance(parsed, list):
            return [str(v).strip() for v in parsed if str(v).strip()]
    text = text.strip("[]")
    separator = ";" if ";" in text else ","
    return [
        part.strip().strip("'\"").strip()
        for part in text.split(separator)
        if part.strip().strip("'\"").strip()
    ]


def optional(value: str | None) -> str | None:
    text = (value or "").strip()
    return text or None


def split_rank(upstream_id: int) -> str:
    """Fixed pseudo-random order key of a dish for the per-country split."""
    return hashlib.sha256(f"{SPLIT_SEED}:{upstream_id}".encode()).hexdigest()


class WWDBuilder(DatasetBuilder):
    """Builds the World Wide Dishes release from its upstream CSV."""

    CODE_VERSION = "1.0"

    @cached_property
    def vocab(self) -> dict[str, Any]:
        return load_yaml(self.spec.folder / "vocab.yaml")

    @cached_property
    def country_rules(self) -> dict[str, Any]:
        return load_yaml(self.spec.folder / "countries.yaml")

    # ------------------------------------------------------------------ countries
    def country_table(self, sources: SourceSet, log: BuildLog) -> dict[str, str]:
        """Upstream name -> ISO alpha-2, from countries_with_continent.csv (checked codes only)."""
        src = sources["continents"]
        table: dict[str, str] = {}
        for row in read_csv(src.path, ["Name", "Country Code"], name=src.name):
            code = (row["Country Code"] or "").strip()
            if is_iso_alpha2(code):
                table[row["Name"].strip()] = code
            else:
                log.quirk(
                    "continent_table_bad_code",
                    f"{row['Name']!r} has code {code!r}",
                    action="name resolved through pycountry instead",
                    where=row.loc("Country Code"),
                )
        return table

    def map_country(self, name: str, table: dict[str, str], row: SourceRow, log: BuildLog) -> dict[str, Any]:
        rules = self.country_rules
        if name in rules.get("disputed", {}):
            log.quirk(
                "country_disputed",
                f"{name!r}: {rules['disputed'][name]}",
                action="kept, status disputed, no code",
                where=row.loc("countries"),
            )
            return {"name": name, "alpha2": None, "subdivision": None, "status": "disputed"}
        if name in rules.get("subnational", {}):
            parent = rules["subnational"][name]["country"]
            sub = rules["subnational"][name].get("subdivision")
            if sub is not None and pycountry.subdivisions.get(code=sub) is None:
                raise SourceError(Location("countries.yaml", None, name), f"unknown ISO 3166-2 code {sub!r}")
            log.quirk(
                "country_subnational",
                f"{name!r} is a region of {parent}",
                action="kept, status subnational",
                where=row.loc("countries"),
                severity="info",
            )
            return {"name": name, "alpha2": parent, "subdivision": sub, "status": "subnational"}
        code = table.get(name)
        if code is None:
            try:
                code = pycountry.countries.lookup(name).alpha_2
            except LookupError:
                code = None
        if code is None:
            log.quirk(
                "country_unmapped",
                f"{name!r} matches no ISO 3166 country",
                action="kept, status unmapped",
                where=row.loc("countries"),
            )
            return {"name": name, "alpha2": None, "subdivision": None, "status": "unmapped"}
        return {"name": name, "alpha2": code, "subdivision": None, "status": "country"}

    # ------------------------------------------------------------------ fields
    def languages(self, row: SourceRow, log: BuildLog) -> list[str]:
        codes = []
        for code in parse_multi(row["language_code"]):
            if pycountry.languages.get(alpha_3=code.lower()) is not None:
                if code.lower() not in codes:
                    codes.append(code.lower())
            else:
                log.quirk(
                    "language_code_invalid",
                    f"{code!r} is not an ISO 639-3 code",
                    action="kept in language_codes_raw only",
                    where=row.loc("language_code"),
                )
        return codes

    def controlled(self, row: SourceRow, field: str, vocab: list[str], log: BuildLog) -> list[str]:
        by_key = {v.lower().replace(" ", ""): v for v in vocab}
        aliases: dict[str, str] = self.vocab.get("option_aliases", {}).get(field, {})
        out = []
        for item in parse_multi(row[field]):
            canonical = by_key.get(item.lower().replace(" ", ""))
            if canonical is None and item.strip().lower() in aliases:
                canonical = aliases[item.strip().lower()]
                if canonical not in vocab:
                    raise SourceError(
                        Location("vocab.yaml", None, field), f"alias target {canonical!r} is not an option"
                    )
                log.quirk(
                    f"{field}_option_alias",
                    f"{item!r} is not a form option spelling",
                    action=f"mapped to {canonical!r}",
                    where=row.loc(field),
                    severity="info",
                )
            if canonical is None:
                log.quirk(
                    f"{field}_unknown_option",
                    f"{item!r} is not a form option",
                    action="mapped to Other/other",
                    where=row.loc(field),
                )
                canonical = by_key.get("other", item)
            if canonical not in out:
                out.append(canonical)
        return out

    def utensils(self, row: SourceRow, log: BuildLog) -> list[str]:
        raw = (row["utensils"] or "").strip()
        mapping: dict[str, str] = self.vocab["utensils"]
        if not raw or raw.lower() in self.vocab["no_utensils"]:
            return []
        out: list[str] = []
        for token in re.split(r",|;|/|&|\+|\band\b|\bor\b|\bwith\b", raw.lower()):
            word = token.strip(" .")
            if not word or word in self.vocab["no_utensils"]:
                continue
            canonical = mapping.get(word) or next((mapping[w] for w in word.split() if w in mapping), None)
            if canonical is None:
                log.quirk(
                    "utensil_unrecognised",
                    f"{word!r} in {raw!r}",
                    action="mapped to other",
                    where=row.loc("utensils"),
                    severity="info",
                )
                canonical = "other"
            if canonical not in out:
                out.append(canonical)
        return out

    def occasions(self, row: SourceRow, log: BuildLog) -> list[str]:
        found: set[str] = set()
        for item in parse_multi(row["occasions"]):
            values = self.vocab["occasions"].get(item.lower())
            if values is None:
                raise SourceError(row.loc("occasions"), f"unknown occasion {item!r} (regular, special, both)")
            found.update(values)
        return [v for v in ("regular", "special") if v in found]

    def links(self, row: SourceRow, log: BuildLog) -> tuple[list[dict[str, Any]], str | None]:
        links: list[dict[str, Any]] = []
        cc = (row["public_cc_image_url"] or "").strip()
        caption = optional(row["public_cc_image_caption"])
        if cc.lower() == NO_CC_IMAGE:
            links.append(_link("cc_image", None, caption, None, "none"))
        elif cc:
            if cc.startswith("data:"):
                log.quirk(
                    "cc_image_inline_data",
                    "the CC image is an inline data: URL, not a link",
                    action="kept verbatim; not checkable as a URL",
                    where=row.loc("public_cc_image_url"),
                )
            links.append(_link("cc_image", cc, caption, None, "cc"))
        uploaded = (row["uploaded_image_url"] or "").strip()
        if uploaded:
            links.append(
                _link(
                    "contributor_photo",
                    uploaded,
                    optional(row["uploaded_image_caption"]),
                    optional(row["uploaded_image_name"]),
                    "contributor-consented",
                )
            )
        recipe = (row["recipe"] or "").strip()
        urls = URL.findall(recipe)
        for url in urls:
            links.append(_link("recipe", url.rstrip(".,;)"), None, None, "none"))
        rest = URL.sub("", recipe).strip(" ,;\n")
        if len(urls) > 1:
            log.quirk(
                "recipe_several_urls",
                f"{len(urls)} URLs in one recipe field",
                action="one link record each",
                where=row.loc("recipe"),
                severity="info",
            )
        if rest and rest.lower() in {"no", "nn", "non", "none", "n/a"}:
            log.quirk(
                "recipe_placeholder",
                f"recipe field {rest!r}",
                action="treated as empty",
                where=row.loc("recipe"),
                severity="info",
            )
            rest = ""
        return links, rest or None

    # ------------------------------------------------------------------ rows
    def parse_row(self, row: SourceRow, table: dict[str, str], log: BuildLog) -> dict[str, Any]:
        raw_id = parse_int(row["id"], row.loc("id"), "an integer id")
        local_name = (row["local_name"] or "").strip()
        if not local_name:
            raise SourceError(row.loc("local_name"), "empty local_name")
        for field in ("local_name", "english_name"):
            problem = name_problem(row[field]) if (row[field] or "").strip() else None
            if problem:
                raise SourceError(row.loc(field), problem)
        country_names = parse_multi(row["countries"])
        if not country_names:
            raise SourceError(row.loc("countries"), "no country given")
        countries = [self.map_country(n, table, row, log) for n in country_names]
        codes = list(dict.fromkeys(c["alpha2"] for c in countries if c["alpha2"]))
        continents = parse_multi(row["continent"])
        bad = [c for c in continents if c not in self.vocab["continents"]]
        if bad:
            raise SourceError(row.loc("continent"), f"unknown continent(s) {bad}")
        links, recipe_text = self.links(row, log)
        return {
            "id": f"wwd-{int(raw_id)}",
            "upstream_id": int(raw_id),
            "local_name": local_name,
            "english_name": optional(row["english_name"]),
            "language": optional(row["language"]),
            "language_codes": self.languages(row, log),
            "language_codes_raw": optional(row["language_code"]),
            "countries": countries,
            "country_codes": codes,
            "continents": continents,
            "regions": parse_multi(row["regions"]),
            "cultures": parse_multi(row["cultures"]),
            "time_of_day": self.controlled(row, "time_of_day", self.vocab["time_of_day"], log),
            "time_of_day_more": optional(row["time_of_day_more"]),
            "type_of_dish": self.controlled(row, "type_of_dish", self.vocab["type_of_dish"], log),
            "type_of_dish_more": optional(row["type_of_dish_more"]),
            "utensils": self.utensils(row, log),
            "utensils_raw": optional(row["utensils"]),
            "drink": optional(row["drink"]),
            "occasions": self.occasions(row, log),
            "occasions_more": optional(row["occasions_more"]),
            "ingredients": parse_multi(row["ingredients"]),
            "recipe_text": recipe_text,
            "more_details": optional(row["more_details"]),
            "links": links,
        }

    def country_split(self, rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        """50/50 per primary country: the first half (rounded up) of each country's dishes, in a
        fixed hash order, goes to `test`; the rest to `train`. Output keeps the upstream order."""
        by_country: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            by_country[row["countries"][0]["name"]].append(row)
        test_ids: set[str] = set()
        for group in by_country.values():
            ordered = sorted(group, key=lambda r: split_rank(r["upstream_id"]))
            test_ids.update(r["id"] for r in ordered[: (len(ordered) + 1) // 2])
        return {
            "train": [r for r in rows if r["id"] not in test_ids],
            "test": [r for r in rows if r["id"] in test_ids],
        }

    def generate(self, sources: SourceSet, log: BuildLog) -> dict[str, dict[str, list[dict]]]:
        table = self.country_table(sources, log)
        src = sources["dishes"]
        rows: list[dict[str, Any]] = []
        seen: dict[int, int] = {}
        for row in read_csv(src.path, COLUMNS, name=src.name):
            record = self.parse_row(row, table, log)
            if record["upstream_id"] in seen:
                raise SourceError(
                    row.loc("id"),
                    f"duplicate id {record['upstream_id']} (first on row {seen[record['upstream_id']]})",
                )
            seen[record["upstream_id"]] = row.row
            rows.append(record)
        if not rows:
            raise SourceError(Location(src.name, 2), "no data rows under the header")
        split = self.country_split(rows)
        log.stats.update(self.statistics(rows, split))
        return {"default": {"test": rows}, "country_split": split}

    @staticmethod
    def statistics(rows: list[dict[str, Any]], split: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        status = Counter(c["status"] for r in rows for c in r["countries"])
        not_iso = sorted(
            {(c["name"], c["status"]) for r in rows for c in r["countries"] if c["status"] != "country"}
        )
        return {
            "default": {
                "rows": len(rows),
                "per_country": dict(Counter(code for r in rows for code in r["country_codes"]).most_common()),
                "per_continent": dict(Counter(c for r in rows for c in r["continents"]).most_common()),
                "per_time_of_day": dict(
                    Counter(t for r in rows for t in set(r["time_of_day"])).most_common()
                ),
                "per_type_of_dish": dict(
                    Counter(t for r in rows for t in set(r["type_of_dish"])).most_common()
                ),
                "per_language": dict(
                    Counter(c for r in rows for c in set(r["language_codes"])).most_common()
                ),
                "languages": len({c for r in rows for c in r["language_codes"]}),
                "language_codes": sorted({c for r in rows for c in r["language_codes"]}),
                "country_name_status": dict(sorted(status.items())),
                "names_not_iso_countries": [f"{name} ({st})" for name, st in not_iso],
                "links": dict(
                    Counter(f"{link['kind']}/{link['license_status']}" for r in rows for link in r["links"])
                ),
            },
            "country_split": {"train": len(split["train"]), "test": len(split["test"])},
        }
