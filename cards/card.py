"""Render the Hub dataset card: a YAML header the Hub and ``datasets`` read (configs,
data_files, features, licence, languages, task categories, size) and a Markdown body with
usage, fields, statistics, build quirks, provenance, datasheet answers and the changelog."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from culturebench.cards.paper import compare, lookup_stat
from culturebench.cards.parsers import parser_lines
from culturebench.cards.usage import evaluate_lines, hub_repo, paper_reference
from culturebench.spec import DatasetSpec
from culturebench.yamlio import load_yaml

TEMPLATES = Path(__file__).parent / "templates"
SIZE_BUCKETS = [
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
]


def size_category(num_rows: int) -> str:
    """The Hub's ``size_categories`` bucket for a number of rows."""
    for limit, label in SIZE_BUCKETS:
        if num_rows < limit:
            return label
    return "n>10M"


def total_rows(manifest: dict[str, Any]) -> int:
    return sum(split["num_rows"] for cfg in manifest["configs"].values() for split in cfg["splits"].values())


def card_languages(spec: DatasetSpec, stats: dict[str, Any]) -> list[str]:
    """The card's ``language:`` tags: the declared languages, or, when ``dataset.yaml`` names
    a build statistic (``card_languages_stat``), the language codes the build validated,
    with the catch-all ``mul`` dropped."""
    path = spec.raw.get("card_languages_stat")
    if not path:
        return list(spec.languages)
    value = lookup_stat(stats, str(path))
    if not value:
        return list(spec.languages)
    declared = [lang for lang in spec.languages if lang != "mul"]
    return declared + [code for code in value if code not in declared]


def card_metadata(
    spec: DatasetSpec, manifest: dict[str, Any], stats: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The YAML header as a dict (key order kept as the Hub shows it)."""
    configs = []
    default = spec.raw.get("default_config")
    infos = []
    for name, cfg in spec.configs.items():
        splits = manifest["configs"][name]["splits"]
        entry: dict[str, Any] = {"config_name": name}
        if name == default:
            entry["default"] = True
        entry["data_files"] = [{"split": split, "path": f"data/{name}/{split}-*.parquet"} for split in splits]
        configs.append(entry)
        download = sum(f["size"] for s in splits.values() for f in s["files"])
        infos.append(
            {
                "config_name": name,
                "features": cfg.features_yaml,
                "splits": [
                    {"name": split, "num_bytes": info["num_bytes"], "num_examples": info["num_rows"]}
                    for split, info in splits.items()
                ],
                "download_size": download,
                "dataset_size": sum(info["num_bytes"] for info in splits.values()),
            }
        )
    raw = spec.raw
    return {
        "pretty_name": spec.pretty_name,
        "license": raw["license"],
        "language": card_languages(spec, stats or {}),
        "multilinguality": raw.get("multilinguality", "monolingual"),
        "task_categories": raw.get("task_categories", []),
        "size_categories": [size_category(total_rows(manifest))],
        "source_datasets": ["original"],
        "tags": raw.get("tags", []),
        "configs": configs,
        "dataset_info": infos,
    }


class _NoAliasDumper(yaml.SafeDumper):
    """YAML dumper that writes repeated objects in full (the Hub card has no anchors)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_NoAliasDumper, allow_unicode=True, sort_keys=False, width=100)


def render_card(spec: DatasetSpec, manifest: dict[str, Any], build_report: dict[str, Any]) -> str:
    """The full ``README.md`` text of a release folder."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    template = env.get_template("dataset_card.md.j2")
    body = template.render(
        spec=spec,
        raw=spec.raw,
        manifest=manifest,
        stats=build_report.get("stats", {}),
        paper=compare(spec, build_report.get("stats", {}), sample=bool(manifest.get("sample"))),
        quirk_counts=build_report.get("quirk_counts", {}),
        quirk_actions=build_report.get("quirk_actions", {}),
        datasheet=spec.datasheet,
        changelog=spec.changelog_entry(spec.version) or "",
        field_docs=spec.field_docs,
        features={name: cfg.features_yaml for name, cfg in spec.configs.items()},
        describe_type=describe_type,
        parser_lines=parser_lines(spec.name),
        hub_repo=hub_repo(spec),
        paper_reference=paper_reference(spec),
        evaluate=evaluate_lines(spec),
        stats_lines={
            name: stats_lines(value)
            for name, value in build_report.get("stats", {}).items()
            if isinstance(value, dict)
        },
    )
    stats = build_report.get("stats", {})
    return "---\n" + _yaml(card_metadata(spec, manifest, stats)) + "---\n\n" + body


def stats_lines(stats: dict[str, Any]) -> list[str]:
    """Readable lines for one config's statistics: scalars as ``key: value``; count tables
    (dicts of numbers) sorted by count; lists joined."""
    lines = []
    for key, value in stats.items():
        label = key.replace("_", " ")
        if isinstance(value, dict):
            items = list(value.items())
            if all(isinstance(v, (int, float)) for _, v in items):
                items.sort(key=lambda kv: (-kv[1], str(kv[0])))
            lines.append(f"{label}: " + ", ".join(f"{k} {v}" for k, v in items))
        elif isinstance(value, list):
            lines.append(f"{label}: " + (", ".join(map(str, value)) or "none"))
        else:
            lines.append(f"{label}: {value}")
    return lines


def describe_type(feature: dict[str, Any]) -> str:
    """Short human-readable type of a feature in YAML-list form."""
    if "dtype" in feature:
        dtype = feature["dtype"]
        if isinstance(dtype, dict) and "class_label" in dtype:
            return "class_label(" + ", ".join(dtype["class_label"].get("names", {}).values()) + ")"
        return str(dtype)
    if "list" in feature:
        inner = feature["list"]
        if isinstance(inner, str):
            return f"list[{inner}]"
        return "list[struct{" + ", ".join(f["name"] for f in inner) + "}]"
    if "struct" in feature:
        return "struct{" + ", ".join(f["name"] for f in feature["struct"]) + "}"
    return "?"


def parse_card(text: str) -> tuple[dict[str, Any], str]:
    """Split a card into its YAML header (parsed) and Markdown body."""
    if not text.startswith("---\n"):
        raise ValueError("the card has no YAML header (must start with '---')")
    end = text.find("\n---\n", 4)
    if end < 0:
        raise ValueError("the card's YAML header is not closed with '---'")
    meta = load_yaml(text[4:end]) or {}
    if not isinstance(meta, dict):
        raise ValueError("the card's YAML header is not a mapping")
    return meta, text[end + 5 :]
