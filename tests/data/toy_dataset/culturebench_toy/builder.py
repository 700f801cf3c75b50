"""Builder of the toy dataset: one JSON Lines file -> one config."""

from __future__ import annotations

from culturebench.builders.base import DatasetBuilder, Rows
from culturebench.builders.sources import SourceSet
from culturebench.builders.tables import read_jsonl_table
from culturebench.buildlog import BuildLog


class ToyBuilder(DatasetBuilder):
    def generate(self, sources: SourceSet, log: BuildLog) -> Rows:
        src = sources["questions"]
        rows = [
            {"id": r["id"], "country": r["country"], "capital": r["capital"]}
            for r in read_jsonl_table(src.path, name=src.name)
        ]
        return {"default": {"test": rows}}
