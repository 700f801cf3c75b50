"""``culturebench site``: a static results site built from run folders, reproductions,
``eval paper`` outputs, release folders and URL-check reports.

The site opens from disk (``file://``) and from any static host: every script, style and map
shape ships inside it (no CDN, no fetch), charts are drawn at build time as SVG (Vega-Lite
specs rendered by ``vl-convert``), and the same inputs give the same bytes.

Modules: :mod:`.inputs` (what each given folder is), :mod:`.views` (what a page shows, read
from the folders), :mod:`.charts` (Vega-Lite specs -> SVG), :mod:`.samples` (the samples
pages' data), :mod:`.release` (the maintainer's release review), :mod:`.build` (pages,
assets, the atomic publish), :mod:`.serve` (a local preview) and :mod:`.space` (a static Hub
Space). Needs the ``site`` extra (``vl-convert-python``).
"""
