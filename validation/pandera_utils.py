"""Run pandera schemas lazily and turn their failure cases into :class:`Finding` rows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pandera.pandas as pa
from pandera.errors import SchemaError, SchemaErrors

from culturebench.validation.findings import Finding


def each(predicate: Callable[[Any], bool], name: str, error: str) -> pa.Check:
    """An element-wise check with a readable name (used for list/struct cells)."""
    return pa.Check(predicate, element_wise=True, name=name, error=error)


def run_schema(schema: pa.DataFrameSchema, frame: pd.DataFrame, config: str) -> list[Finding]:
    """Validate ``frame`` with ``schema`` collecting every failure (lazy mode)."""
    check = f"schema:{config}"
    try:
        schema.validate(frame, lazy=True)
    except SchemaErrors as exc:
        return _findings(exc.failure_cases, frame, check, config)
    except SchemaError as exc:  # pragma: no cover - lazy mode raises SchemaErrors
        return [Finding(check, str(exc), config=config)]
    return []


def _findings(cases: pd.DataFrame, frame: pd.DataFrame, check: str, config: str) -> list[Finding]:
    out = []
    ids = frame["id"] if "id" in frame.columns else None
    seen_wide: set[tuple[str, int]] = set()
    for case in cases.to_dict("records"):
        index = case.get("index")
        row = int(index) if index is not None and not pd.isna(index) else None
        row_id = str(ids.iloc[row]) if ids is not None and row is not None and row < len(ids) else None
        column = case.get("column")
        field = None if column is None or pd.isna(column) else str(column)
        what = case.get("check")
        message = f"{what} failed (value: {_short(case.get('failure_case'))})"
        if case.get("schema_context") == "DataFrameSchema" and row is not None:
            # A row-wise check over several columns: pandera lists every column of the
            # failing row; report the row once.
            if (str(what), row) in seen_wide:
                continue
            seen_wide.add((str(what), row))
            field, message = None, f"{what} failed"
        out.append(Finding(check=check, message=message, config=config, row=row, row_id=row_id, field=field))
    return out


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
