"""Write the site's world map shapes (``culturebench/site/assets/world-110m.geojson``) from
Natural Earth's 1:110m Admin-0 countries (public domain, naturalearthdata.com), as shipped in
the ``geopandas==0.14.4`` wheel (``geopandas/datasets/naturalearth_lowres``; later geopandas
releases dropped it). Run once by a maintainer; the output is committed, so neither the
site nor its tests download anything.

    pip download geopandas==0.14.4 --no-deps -d /tmp/gpd && pip install pyshp
    python scripts/make_world_shapes.py /tmp/gpd/geopandas-0.14.4-py3-none-any.whl

Each feature keeps its ISO 3166 alpha-2 and alpha-3 codes and its English name; coordinates are
rounded to 0.1 degree (the 1:110m scale draws nothing finer); Antarctica is left out (no dish
comes from it and it takes a fifth of the map). Exterior rings keep the shapefile's clockwise
order, which is what d3-geo (Vega's projection code) expects.
"""

from __future__ import annotations

import io
import itertools
import json
import sys
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "culturebench" / "site" / "assets" / "world-110m.geojson"
INNER = "geopandas/datasets/naturalearth_lowres/naturalearth_lowres"
# Natural Earth writes -99 where ISO 3166 has no code; Kosovo has a user-assigned one
NO_ISO = {"Kosovo": ("XK", "XKX")}
# Natural Earth's de facto units without an ISO 3166 entry are drawn as part of the ISO country
# (the datasets code countries by ISO 3166)
PART_OF = {"CYN": "CYP", "SOL": "SOM"}


def _signed_area(ring: list[list[float]]) -> float:
    """Shoelace area: negative for a clockwise ring (y up)."""
    return sum(x1 * y2 - x2 * y1 for (x1, y1), (x2, y2) in itertools.pairwise(ring)) / 2


def main(wheel: str) -> None:
    import pycountry
    import shapefile  # pyshp

    archive = zipfile.ZipFile(wheel)
    reader = shapefile.Reader(
        shp=io.BytesIO(archive.read(INNER + ".shp")),
        shx=io.BytesIO(archive.read(INNER + ".shx")),
        dbf=io.BytesIO(archive.read(INNER + ".dbf")),
        encoding="latin-1",  # the .cpg says ISO-8859-1 (Côte d'Ivoire)
    )
    by_code: dict[str, dict] = {}
    for item in reader.iterShapeRecords():
        name, iso3 = item.record["name"], item.record["iso_a3"]
        if name == "Antarctica":
            continue
        if iso3 == "-99":
            iso2, iso3 = NO_ISO[name]
        else:
            iso3 = PART_OF.get(iso3, iso3)
            country = pycountry.countries.get(alpha_3=iso3)
            iso2, name = country.alpha_2, name if iso3 == item.record["iso_a3"] else country.name
        points, parts = item.shape.points, [*item.shape.parts, len(item.shape.points)]
        rings = []
        for start, end in itertools.pairwise(parts):
            ring: list[list[float]] = []
            for x, y in points[start:end]:
                point = [round(x, 1), round(y, 1)]
                if not ring or ring[-1] != point:
                    ring.append(point)
            if len(ring) >= 4:
                rings.append(ring)
        feature = by_code.setdefault(
            iso2,
            {
                "type": "Feature",
                "id": iso2,
                "properties": {"iso2": iso2, "iso3": iso3, "name": name},
                "geometry": {"type": "MultiPolygon", "coordinates": []},
            },
        )
        polygons: list[list[list[list[float]]]] = []
        for ring in rings:  # a clockwise ring starts a polygon; a counter-clockwise one is its hole
            if _signed_area(ring) < 0 or not polygons:
                polygons.append([ring])
            else:
                polygons[-1].append(ring)
        feature["geometry"]["coordinates"] += polygons
    features = [by_code[code] for code in sorted(by_code)]
    collection = {
        "type": "FeatureCollection",
        "source": "Natural Earth 1:110m Admin-0 countries (public domain), via geopandas 0.14.4",
        "features": features,
    }
    OUT.write_text(json.dumps(collection, separators=(",", ":"), sort_keys=True) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(features)} countries, {OUT.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main(sys.argv[1])
