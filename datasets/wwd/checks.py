"""World Wide Dishes validation: pandera schemas and cross-field rules.

Cross-field rules: `country_codes` are exactly the codes of `countries`; statuses agree
with codes; the `country_split` config holds every `default` dish exactly once, with each
primary country split 50/50 (test gets the odd one).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandera.pandas as pa
import pycountry

from culturebench.countries import is_iso_alpha2
from culturebench.validation.findings import Finding
from culturebench.validation.pandera_utils import each
from culturebench.validation.rows import Frames, iter_rows

TIME_OF_DAY = {"breakfast", "lunch", "dinner", "snack", "anytime", "other"}
UTENSILS = {
    "knife",
    "fork",
    "spoon",
    "fingers",
    "right hand",
    "left hand",
    "hand",
    "chopsticks",
    "other food",
    "other",
}
CONTINENTS = {"Africa", "Asia", "Europe", "North America", "Oceania", "South America"}
STATUSES = {"country", "subnational", "disputed", "unmapped"}
LINK_KINDS = {"cc_image", "contributor_photo", "recipe"}
LICENSE_STATUS = {"cc", "contributor-consented", "none"}
CROSS_CHECKS = ("cross:country_codes", "cross:split_covers_default", "cross:split_balanced_per_country")


def _subset(allowed: set[str]):
    return lambda v: isinstance(v, list) and all(x in allowed for x in v) and len(set(v)) == len(v)


def _string_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) and x.strip() == x and x for x in v)


def _country_ok(c: Any) -> bool:
    if not isinstance(c, dict) or not c.get("name") or c.get("status") not in STATUSES:
        return False
    code = c.get("alpha2")
    if c["status"] in ("country", "subnational"):
        return code is not None and is_iso_alpha2(code)
    return code is None


def _link_ok(link: Any) -> bool:
    if not isinstance(link, dict) or link.get("kind") not in LINK_KINDS:
        return False
    if link.get("license_status") not in LICENSE_STATUS:
        return False
    url = link.get("url")
    if link["kind"] == "cc_image" and url is None:
        return link["license_status"] == "none"  # "No CC Images Available"
    return isinstance(url, str) and url.startswith(("http://", "https://", "data:image/"))


def _language_codes_ok(v: Any) -> bool:
    return isinstance(v, list) and all(pycountry.languages.get(alpha_3=c) is not None for c in v)


def schema(name: str) -> pa.DataFrameSchema:
    nullable_str = pa.Column(str, nullable=True)
    return pa.DataFrameSchema(
        {
            "id": pa.Column(str, pa.Check.str_matches(r"^wwd-[1-9]\d*$"), unique=True),
            "upstream_id": pa.Column(int, pa.Check.gt(0), unique=True),
            "local_name": pa.Column(str, pa.Check.str_length(min_value=1)),
            "english_name": nullable_str,
            "language": nullable_str,
            "language_codes": pa.Column(
                object, each(_language_codes_ok, "iso_639_3", "language codes must be ISO 639-3")
            ),
            "language_codes_raw": nullable_str,
            "countries": pa.Column(
                object,
                each(
                    lambda v: isinstance(v, list) and len(v) > 0 and all(map(_country_ok, v)),
                    "country_records",
                    "countries: name, status and a code iff mapped",
                ),
            ),
            "country_codes": pa.Column(
                object,
                each(
                    lambda v: isinstance(v, list) and all(map(is_iso_alpha2, v)),
                    "iso_3166_alpha2_list",
                    "country_codes must be ISO alpha-2",
                ),
            ),
            "continents": pa.Column(
                object,
                each(
                    lambda v: _subset(CONTINENTS)(v) and len(v) > 0,
                    "continents",
                    "continents from the six continent names",
                ),
            ),
            "regions": pa.Column(object, each(_string_list, "string_list", "list of strings")),
            "cultures": pa.Column(object, each(_string_list, "string_list", "list of strings")),
            "time_of_day": pa.Column(
                object, each(_subset(TIME_OF_DAY), "time_of_day_vocab", "form options only")
            ),
            "time_of_day_more": nullable_str,
            "type_of_dish": pa.Column(object, each(_string_list, "string_list", "list of strings")),
            "type_of_dish_more": nullable_str,
            "utensils": pa.Column(
                object, each(_subset(UTENSILS), "utensil_vocab", "normalised utensils only")
            ),
            "utensils_raw": nullable_str,
            "drink": nullable_str,
            "occasions": pa.Column(
                object,
                each(
                    lambda v: _subset({"regular", "special"})(v) and len(v) > 0,
                    "occasions",
                    "regular and/or special",
                ),
            ),
            "occasions_more": nullable_str,
            "ingredients": pa.Column(object, each(_string_list, "string_list", "list of strings")),
            "recipe_text": nullable_str,
            "more_details": nullable_str,
            "links": pa.Column(
                object,
                each(
                    lambda v: isinstance(v, list) and all(map(_link_ok, v)),
                    "link_records",
                    "links: kind, url (or none for No CC Images), licence status",
                ),
            ),
        },
        strict=True,
        ordered=True,
        name=f"wwd/{name}",
    )


SCHEMAS = {"default": schema("default"), "country_split": schema("country_split")}


def cross_checks(frames: Frames) -> list[Finding]:
    out: list[Finding] = []
    default = frames["default"]
    for index, row in iter_rows(default):
        expected = list(dict.fromkeys(c["alpha2"] for c in row["countries"] if c["alpha2"]))
        if list(row["country_codes"]) != expected:
            out.append(
                Finding(
                    "cross:country_codes",
                    f"country_codes {row['country_codes']} != {expected}",
                    config="default",
                    row=int(index),
                    row_id=row["id"],
                    field="country_codes",
                )
            )
    split_ids = frames.split_ids.get("country_split", {})
    train, test = set(split_ids.get("train", [])), set(split_ids.get("test", []))
    both = train & test
    if both:
        out.append(
            Finding(
                "cross:split_covers_default",
                f"{len(both)} ids in both train and test, e.g. {sorted(both)[:3]}",
                config="country_split",
            )
        )
    missing = set(default["id"]) - (train | test)
    extra = (train | test) - set(default["id"])
    if missing or extra:
        out.append(
            Finding(
                "cross:split_covers_default",
                f"{len(missing)} default ids missing from the split, {len(extra)} unknown ids",
                config="country_split",
            )
        )
    primary = {r["id"]: r["countries"][0]["name"] for _, r in iter_rows(default)}
    n_train = Counter(primary[i] for i in train if i in primary)
    n_test = Counter(primary[i] for i in test if i in primary)
    for country in sorted(set(n_train) | set(n_test)):
        if not 0 <= n_test[country] - n_train[country] <= 1:
            out.append(
                Finding(
                    "cross:split_balanced_per_country",
                    f"{country}: {n_train[country]} train vs {n_test[country]} test (must be 50/50)",
                    config="country_split",
                    field="countries",
                )
            )
    return out
