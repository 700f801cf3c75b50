"""BORSCH validation: pandera schemas per config and the cross-field rules.

Cross-field rules: parallel IDs exist on the side they claim and the two directions of
every link agree; every image belongs to its dish's upstream folder; stable ids are unique
across configs; origin-name lists line up with the origin codes.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import pandera.pandas as pa

from culturebench.countries import is_iso_alpha2
from culturebench.text import normalize_name
from culturebench.validation.findings import Finding
from culturebench.validation.pandera_utils import each
from culturebench.validation.rows import iter_rows

SHA256 = re.compile(r"^[0-9a-f]{64}$")
PROVENANCE = r"^(wikidata|bootstrap-\d+)$"
ORIGIN_NAME_FIELDS = ("origin_names_en", "origin_names_ru", "origin_names_uk")
CROSS_CHECKS = (
    "cross:parallel_link_exists",
    "cross:parallel_backlink",
    "cross:image_belongs_to_dish",
    "cross:unique_ids",
)


def _origins_ok(codes: Any) -> bool:
    return (
        isinstance(codes, list)
        and len(codes) > 0
        and len(set(codes)) == len(codes)
        and all(isinstance(c, str) and is_iso_alpha2(c) for c in codes)
    )


def _string_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _image_ok(image: Any) -> bool:
    if not isinstance(image, dict):
        return False
    sha = image.get("sha256")
    size = image.get("size_bytes")
    return (
        isinstance(image.get("url"), str)
        and image["url"].startswith("https://")
        and isinstance(image.get("upstream_path"), str)
        and image.get("language") in ("ru", "uk")
        and (sha is None or bool(SHA256.match(sha)))
        and (size is None or size > 0)
        and bool(image.get("license"))
    )


def _images_ok(images: Any) -> bool:
    return isinstance(images, list) and all(_image_ok(i) for i in images)


def _stripped(value: Any) -> bool:
    return isinstance(value, str) and value != "" and value == value.strip()


def _common_columns() -> dict[str, pa.Column]:
    return {
        "origins": pa.Column(
            object,
            each(
                _origins_ok,
                "iso_3166_alpha2_list",
                "origins must be a non-empty list of distinct ISO 3166-1 alpha-2 codes",
            ),
        ),
        **{
            name: pa.Column(object, each(_string_list, "string_list", f"{name} must be a list of names"))
            for name in ORIGIN_NAME_FIELDS
        },
        "images": pa.Column(
            object,
            each(
                _images_ok,
                "image_records",
                "every image needs an https url, upstream "
                "path, language, sha256 (64 hex or null), size > 0 or null, licence",
            ),
        ),
    }


def _names_lined_up(frame: pd.DataFrame) -> pd.Series:
    lengths = frame["origins"].map(len)
    ok = pd.Series(True, index=frame.index)
    for name in ORIGIN_NAME_FIELDS:
        ok &= frame[name].map(len) == lengths
    return ok


def _origin_names_aligned() -> pa.Check:
    return pa.Check(
        _names_lined_up,
        name="origin_names_aligned",
        error="origin name lists must have one name per origin code",
    )


def language_schema(language: str) -> pa.DataFrameSchema:
    """Schema of the ``ru`` / ``uk`` configs."""
    common = _common_columns()
    return pa.DataFrameSchema(
        {
            "id": pa.Column(str, pa.Check.str_matches(rf"^{language}-[1-9]\d*$"), unique=True),
            "upstream_id": pa.Column(int, pa.Check.gt(0), unique=True),
            "name": pa.Column(str, each(_stripped, "non_empty_stripped", "empty or padded name")),
            "name_normalized": pa.Column(str),
            **{k: v for k, v in common.items() if k != "images"},
            "provenance": pa.Column(str, pa.Check.str_matches(PROVENANCE)),
            "parallel_ids": pa.Column(
                object,
                each(
                    lambda v: isinstance(v, list) and all(str(x).startswith("par-") for x in v),
                    "parallel_id_list",
                    "parallel_ids must be a list of par-* ids",
                ),
            ),
            "images": common["images"],
        },
        checks=[
            pa.Check(
                lambda df: df["id"] == language + "-" + df["upstream_id"].astype(str),
                name="id_matches_upstream_id",
                error="id must be '<lang>-<upstream_id>'",
            ),
            pa.Check(
                lambda df: df["name_normalized"] == df["name"].map(normalize_name),
                name="name_normalized_rule",
                error="name_normalized != normalize_name(name)",
            ),
            _origin_names_aligned(),
        ],
        strict=True,
        ordered=True,
        name=f"borsch/{language}",
    )


def _parallel_ids(frame: pd.DataFrame) -> pd.Series:
    """``par-ru<ru_id>-uk<uk_id>`` of every row, a side left out where its id is null."""

    def side(lang: str, value: Any) -> str:
        return f"{lang}{int(value)}" if pd.notna(value) else ""

    ids = [
        "par-" + "-".join(p for p in (side("ru", ru), side("uk", uk)) if p)
        for ru, uk in zip(frame["ru_id"].tolist(), frame["uk_id"].tolist(), strict=True)
    ]
    return pd.Series(ids, index=frame.index)


def parallel_schema() -> pa.DataFrameSchema:
    """Schema of the ``parallel`` config."""
    common = _common_columns()
    nullable_id = pa.Column(float, pa.Check.gt(0), nullable=True, coerce=True)
    nullable_ref = pa.Column(str, nullable=True)
    return pa.DataFrameSchema(
        {
            "id": pa.Column(str, pa.Check.str_matches(r"^par-(ru[1-9]\d*)?(-?uk[1-9]\d*)?$"), unique=True),
            "name_ru": pa.Column(str, each(_stripped, "non_empty_stripped", "empty or padded name")),
            "name_uk": pa.Column(str, each(_stripped, "non_empty_stripped", "empty or padded name")),
            "name_ru_normalized": pa.Column(str),
            "name_uk_normalized": pa.Column(str),
            "ru_id": nullable_id,
            "uk_id": nullable_id,
            "ru_ref": nullable_ref,
            "uk_ref": nullable_ref,
            **{k: v for k, v in common.items() if k != "images"},
            "provenance_ru": pa.Column(str, pa.Check.str_matches(PROVENANCE), nullable=True),
            "provenance_uk": pa.Column(str, pa.Check.str_matches(PROVENANCE), nullable=True),
            "images": common["images"],
        },
        checks=[
            pa.Check(
                lambda df: df["ru_id"].notna() | df["uk_id"].notna(),
                name="links_at_least_one_side",
                error="neither ru_id nor uk_id is set",
            ),
            pa.Check(
                lambda df: df["id"] == _parallel_ids(df),
                name="id_matches_links",
                error="id must be par-ru<ru_id>-uk<uk_id>",
            ),
            pa.Check(
                lambda df: df["ru_ref"].isna() == df["ru_id"].isna(),
                name="ru_ref_iff_ru_id",
                error="ru_ref must be set exactly when ru_id is",
            ),
            pa.Check(
                lambda df: df["uk_ref"].isna() == df["uk_id"].isna(),
                name="uk_ref_iff_uk_id",
                error="uk_ref must be set exactly when uk_id is",
            ),
            pa.Check(
                lambda df: (
                    (df["name_ru_normalized"] == df["name_ru"].map(normalize_name))
                    & (df["name_uk_normalized"] == df["name_uk"].map(normalize_name))
                ),
                name="name_normalized_rule",
                error="name_*_normalized != normalize_name(name_*)",
            ),
            _origin_names_aligned(),
        ],
        strict=True,
        ordered=True,
        name="borsch/parallel",
    )


SCHEMAS = {"ru": language_schema("ru"), "uk": language_schema("uk"), "parallel": parallel_schema()}


def _image_findings(frame: pd.DataFrame, config: str, allowed: Any) -> list[Finding]:
    out = []
    for index, row in iter_rows(frame):
        prefixes = allowed(row)
        for image in row["images"]:
            path = image.get("upstream_path") or ""
            if not any(path.startswith(p) for p in prefixes):
                out.append(
                    Finding(
                        "cross:image_belongs_to_dish",
                        f"image {path!r} is not under the dish's folder(s) {prefixes}",
                        config=config,
                        row=int(index),
                        row_id=row["id"],
                        field="images",
                    )
                )
    return out


def cross_checks(frames: dict[str, pd.DataFrame]) -> list[Finding]:
    """Rules that span rows or configs. Each finding names the config, row and field."""
    out: list[Finding] = []
    ru, uk, par = frames["ru"], frames["uk"], frames["parallel"]
    by_lang = {"ru": ru, "uk": uk}

    # Parallel links exist on the side they claim, and back-links agree.
    for lang, table in by_lang.items():
        ids = dict(zip(table["upstream_id"], table["id"], strict=True))
        back = {rid: set(plist) for rid, plist in zip(table["id"], table["parallel_ids"], strict=True)}
        for index, row in iter_rows(par):
            value = row[f"{lang}_id"]
            if pd.isna(value):
                continue
            target = ids.get(int(value))
            if target is None:
                out.append(
                    Finding(
                        "cross:parallel_link_exists",
                        f"{lang}_id {int(value)} points nowhere: no such upstream_id in config {lang}",
                        config="parallel",
                        row=int(index),
                        row_id=row["id"],
                        field=f"{lang}_id",
                    )
                )
                continue
            if row[f"{lang}_ref"] != target:
                out.append(
                    Finding(
                        "cross:parallel_link_exists",
                        f"{lang}_ref {row[f'{lang}_ref']!r} != {target!r}",
                        config="parallel",
                        row=int(index),
                        row_id=row["id"],
                        field=f"{lang}_ref",
                    )
                )
            if row["id"] not in back.get(target, set()):
                out.append(
                    Finding(
                        "cross:parallel_backlink",
                        f"{target} does not list {row['id']} in parallel_ids",
                        config=lang,
                        row_id=target,
                        field="parallel_ids",
                    )
                )
        par_ids = set(par["id"])
        for index, row in iter_rows(table):
            for pid in row["parallel_ids"]:
                if pid not in par_ids:
                    out.append(
                        Finding(
                            "cross:parallel_backlink",
                            f"parallel id {pid} does not exist",
                            config=lang,
                            row=int(index),
                            row_id=row["id"],
                            field="parallel_ids",
                        )
                    )

    # Images belong to their dish.
    for lang, table in by_lang.items():
        out += _image_findings(
            table, lang, lambda r, lang=lang: [f"data/{lang.upper()}/images/{r['upstream_id']}/"]
        )
    out += _image_findings(
        par,
        "parallel",
        lambda r: [
            f"data/{lang.upper()}/images/{int(r[f'{lang}_id'])}/"
            for lang in ("ru", "uk")
            if pd.notna(r[f"{lang}_id"])
        ],
    )

    # Stable ids unique across the whole dataset.
    seen: dict[str, str] = {}
    for config, table in frames.items():
        for index, rid in enumerate(table["id"]):
            if rid in seen and seen[rid] != config:
                out.append(
                    Finding(
                        "cross:unique_ids",
                        f"id {rid} also used in config {seen[rid]}",
                        config=config,
                        row=index,
                        row_id=rid,
                        field="id",
                    )
                )
            seen.setdefault(rid, config)
    return out
