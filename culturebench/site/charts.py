"""The site's charts: Vega-Lite specs rendered to SVG at build time by ``vl-convert`` (the
Vega and Vega-Lite JavaScript libraries compiled into one binary wheel). Why so, rather than
Plotly or Vega-Embed in the page: an SVG needs no script to show, no CDN and no fetch (a page
over ``file://`` cannot fetch), it is the same bytes from the same spec, it prints, and
screen readers get its labels; the spec beside it stays open for anyone who wants it live.

Three kinds: a world map where the units of a breakdown are countries (ISO 3166 codes or
names), horizontal bars with 95% intervals where they are not (continents, regions,
cuisines), and a heatmap for a confusion matrix. Each mark layer is named (``values``,
``bars``, ``cells``), so its marks can be counted in the SVG (``g.values_marks path``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

ASSETS = Path(__file__).resolve().parent / "assets"
WORLD = ASSETS / "world-110m.geojson"
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"
CONFIG = {
    "font": FONT,
    "view": {"stroke": None},
    "axis": {"labelFontSize": 11, "titleFontSize": 12},
    "title": {"fontSize": 13, "anchor": "start"},
}


def svg(spec: Mapping[str, Any], uid: str) -> str:
    """``spec`` drawn as SVG; no data is read from anywhere but the spec. Vega numbers the
    SVG's element ids (gradients, clip paths) by a counter of the process; they are renamed
    ``<uid>-<k>`` so the same spec gives the same bytes, and two charts inlined in one page
    never share an id."""
    import re

    import vl_convert  # the `site` extra

    text = vl_convert.vegalite_to_svg(dict(spec), config=CONFIG, allowed_base_urls=[])
    ids = list(dict.fromkeys(re.findall(r'\bid="([^"]+)"', text)))
    names = {old: f"{uid}-{k}" for k, old in enumerate(ids)}
    if names:
        pattern = re.compile(r'(\bid="|url\(#)(' + "|".join(map(re.escape, ids)) + r')(?=[")])')
        text = pattern.sub(lambda m: m.group(1) + names[m.group(2)], text)
    return text


@cache
def world() -> dict[str, Any]:
    """Natural Earth 1:110m countries (``scripts/make_world_shapes.py``), keyed ISO alpha-2."""
    return json.loads(WORLD.read_text(encoding="utf-8"))


def country_code(label: str) -> str | None:
    """The ISO 3166 alpha-2 code a breakdown label stands for (``UA``, ``UKR``, ``Ukraine``),
    or None (a continent, a region, a cuisine)."""
    import pycountry

    text = str(label).strip()
    if not text:
        return None
    codes = {f["id"] for f in world()["features"]}
    if len(text) == 2 and text.upper() in codes:
        return text.upper()
    try:
        found = pycountry.countries.lookup(text)
    except LookupError:
        return None
    return found.alpha_2 if found.alpha_2 in codes else None


def is_geographic(labels: Sequence[str]) -> bool:
    """Whether a breakdown is by country: at least 3 labels, 80% of them countries."""
    if len(labels) < 3:
        return False
    return sum(country_code(label) is not None for label in labels) >= 0.8 * len(labels)


def map_spec(title: str, values: Mapping[str, tuple[float, int | None]], metric: str) -> dict[str, Any]:
    """A world map: every country in grey, the countries of ``values`` (ISO alpha-2 ->
    (value, n)) coloured by value (0-1)."""
    shapes = world()["features"]
    coloured = []
    for feature in shapes:
        code = feature["id"]
        if code in values:
            value, n = values[code]
            coloured.append({**feature, "properties": {**feature["properties"], "value": value, "n": n}})
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": title,
        "width": 640,
        "height": 330,
        "projection": {"type": "equalEarth"},
        "layer": [
            {
                "name": "land",
                "data": _features(shapes),
                "mark": {"type": "geoshape", "fill": "#e5e7eb", "stroke": "#ffffff", "strokeWidth": 0.4},
            },
            {
                "name": "values",
                "data": _features(coloured),
                "mark": {"type": "geoshape", "stroke": "#ffffff", "strokeWidth": 0.4},
                "encoding": {
                    "color": {
                        "field": "properties.value",
                        "type": "quantitative",
                        "title": metric,
                        "scale": {"domain": [0, 1], "scheme": "viridis"},
                    },
                    "tooltip": [
                        {"field": "properties.name", "title": "country"},
                        {"field": "properties.value", "title": metric, "format": ".3f"},
                        {"field": "properties.n", "title": "n"},
                    ],
                },
            },
        ],
    }


def _features(features: list[dict[str, Any]]) -> dict[str, Any]:
    """Inline GeoJSON features as a Vega-Lite data source (nothing is fetched)."""
    return {
        "values": {"type": "FeatureCollection", "features": features},
        "format": {"type": "json", "property": "features"},
    }


def bars_spec(title: str, rows: Sequence[Mapping[str, Any]], metric: str) -> dict[str, Any]:
    """Horizontal bars, one per label (``label``, ``value``, ``lo``, ``hi``, ``n``), with the
    95% interval as a rule where there is one; labels in the order given."""
    order = [str(r["label"]) for r in rows]
    data = [{**r, "label": str(r["label"])} for r in rows]
    y = {"field": "label", "type": "nominal", "sort": order, "title": None}
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": title,
        "width": 420,
        "height": {"step": 18},
        "data": {"values": data},
        "layer": [
            {
                "name": "bars",
                "mark": {"type": "bar", "color": "#4f46e5"},
                "encoding": {
                    "y": y,
                    "x": {"field": "value", "type": "quantitative", "title": metric},
                    "tooltip": [
                        {"field": "label"},
                        {"field": "value", "format": ".3f", "title": metric},
                        {"field": "n"},
                    ],
                },
            },
            {
                "name": "intervals",
                "transform": [{"filter": "isValid(datum.lo) && isValid(datum.hi)"}],
                "mark": {"type": "rule", "color": "#111827"},
                "encoding": {"y": y, "x": {"field": "lo", "type": "quantitative"}, "x2": {"field": "hi"}},
            },
        ],
    }


def heatmap_spec(
    title: str, labels: Sequence[str], columns: Sequence[str], matrix: Sequence[Sequence[Any]]
) -> dict[str, Any]:
    """A confusion matrix: true label (rows) x predicted (columns), counts in the cells."""
    cells = [
        {"true": str(label), "predicted": str(column), "count": int(matrix[i][j] or 0)}
        for i, label in enumerate(labels)
        for j, column in enumerate(columns)
    ]
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": title,
        "data": {"values": cells},
        "width": {"step": 22},
        "height": {"step": 22},
        "encoding": {
            "x": {
                "field": "predicted",
                "type": "nominal",
                "sort": list(map(str, columns)),
                "title": "predicted",
            },
            "y": {"field": "true", "type": "nominal", "sort": list(map(str, labels)), "title": "true"},
        },
        "layer": [
            {
                "name": "cells",
                "mark": {"type": "rect"},
                "encoding": {
                    "color": {"field": "count", "type": "quantitative", "scale": {"scheme": "blues"}},
                    "tooltip": [{"field": "true"}, {"field": "predicted"}, {"field": "count"}],
                },
            },
            {
                "name": "counts",
                "transform": [{"filter": "datum.count > 0"}],
                "mark": {"type": "text", "fontSize": 9},
                "encoding": {"text": {"field": "count"}},
            },
        ],
    }
