"""Deterministic Parquet writing with Hugging Face ``datasets`` features.

Same rows + same features + same library versions -> byte-identical files: rows keep the
builder's order, no timestamps are written, compression and row-group size are fixed, and
the features travel in the schema metadata (``huggingface`` key) so ``load_dataset`` reads
them back exactly as declared.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from culturebench.hashing import sha256_file

ROW_GROUP_SIZE = 1000  # rows, at most
#: Row groups are also capped in bytes: the Hub's dataset viewer fails on row groups beyond a
#: few hundred MB, and an image config (about 1.1 MB a row with BORSCH images embedded)
#: would make a 1,000-row group of ~1.1 GB.
ROW_GROUP_BYTES = 64 * 1024 * 1024
MAX_SHARD_BYTES = 256 * 1024 * 1024
COMPRESSION = "zstd"
COMPRESSION_LEVEL = 9


def to_table(rows: Sequence[dict[str, Any]], features) -> pa.Table:
    """Encode rows with ``features`` (a ``datasets.Features``) into an Arrow table."""
    encoded = [features.encode_example(row) for row in rows]
    return pa.Table.from_pylist(encoded, schema=features.arrow_schema)


def _shards(table: pa.Table) -> list[pa.Table]:
    if table.num_rows == 0 or table.nbytes <= MAX_SHARD_BYTES:
        return [table]
    count = -(-table.nbytes // MAX_SHARD_BYTES)
    step = -(-table.num_rows // count)
    return [table.slice(i, step) for i in range(0, table.num_rows, step)]


def row_group_rows(table: pa.Table) -> int:
    """Rows per row group: :data:`ROW_GROUP_SIZE`, fewer when the rows are big, so a row
    group stays near :data:`ROW_GROUP_BYTES` (in memory, before compression)."""
    if table.num_rows == 0:
        return ROW_GROUP_SIZE
    per_row = max(1, table.nbytes // table.num_rows)
    return max(1, min(ROW_GROUP_SIZE, ROW_GROUP_BYTES // per_row))


def write_split(table: pa.Table, folder: Path, config: str, split: str) -> list[dict[str, Any]]:
    """Write ``table`` as ``data/<config>/<split>-NNNNN-of-NNNNN.parquet`` under ``folder``.

    Returns one record per file: relative path, sha256, size and row count.
    """
    out_dir = folder / "data" / config
    out_dir.mkdir(parents=True, exist_ok=True)
    shards = _shards(table)
    records = []
    for index, shard in enumerate(shards):
        rel = f"data/{config}/{split}-{index:05d}-of-{len(shards):05d}.parquet"
        path = folder / rel
        pq.write_table(
            shard,
            path,
            compression=COMPRESSION,
            compression_level=COMPRESSION_LEVEL,
            row_group_size=row_group_rows(shard),
            use_dictionary=True,
            write_statistics=True,
            write_page_index=True,  # lets readers (the viewer, DuckDB) skip pages
        )
        records.append(
            {
                "path": rel,
                "sha256": sha256_file(path),
                "size": path.stat().st_size,
                "num_rows": shard.num_rows,
            }
        )
    return records


def read_table_checked(path: Path, name: str | None = None) -> pa.Table:
    """One Parquet file as a table; a file that is missing, not Parquet, truncated or corrupt
    is a :class:`~culturebench.errors.SourceError` naming it (``name``, default its path)."""
    from culturebench.errors import Location, SourceError

    label = name or str(path)
    try:
        return pq.read_table(path)
    except FileNotFoundError:
        raise SourceError(Location(label), "no such file") from None
    except (pa.ArrowException, OSError, ValueError) as exc:
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise SourceError(Location(label), f"not a readable Parquet file: {why}") from None


def read_split(folder: Path, files: Sequence[str]) -> pa.Table:
    """Read and concatenate the Parquet files of one split (``files`` relative to ``folder``);
    :class:`~culturebench.errors.SourceError` naming the file that cannot be read, or the
    second of two files whose columns differ."""
    from culturebench.errors import Location, SourceError

    tables = [read_table_checked(folder / f, f) for f in files]
    if len(tables) == 1:
        return tables[0]
    try:
        return pa.concat_tables(tables)
    except pa.ArrowException:
        first = tables[0].schema
        other = next((i for i, t in enumerate(tables) if not t.schema.equals(first)), len(tables) - 1)
        raise SourceError(
            Location(files[other]), f"its columns differ from {files[0]}'s: the split's files do not match"
        ) from None
