"""YAML parsing in one place, with libyaml's C loader where PyYAML was built with it.

``yaml.safe_load`` uses the pure-Python ``SafeLoader``; ``yaml.CSafeLoader`` resolves the same
tags to the same Python objects (the safe schema: no arbitrary objects) at several times the
speed. Use :func:`load_yaml` instead of ``yaml.safe_load`` everywhere.

Every failure is a :class:`YamlError`, one line naming the file (or ``name``) and the line,
e.g. ``prompts.yaml, row 3: not valid YAML: mapping values are not allowed here (line 3,
column 9)``. It is both a :class:`~culturebench.errors.SourceError` (the CLI prints it as bad
input) and a ``yaml.YAMLError`` (callers that catch those keep working): syntax errors, a file
that is missing, not UTF-8 or not a file, nesting too deep for the parser, and values the safe
schema cannot build (``2024-02-30`` as a date).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any

import yaml

from culturebench.errors import Location, SourceError

#: The fastest safe loader this PyYAML offers (``CSafeLoader`` needs libyaml).
SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlError(SourceError, yaml.YAMLError):
    """A YAML file or text that cannot be read or parsed (its location and why)."""


def _line(exc: yaml.YAMLError) -> tuple[int | None, str]:
    """The 1-based line of a YAML error and `` (line L, column C)``, where it has a mark."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is None:
        return None, ""
    return mark.line + 1, f" (line {mark.line + 1}, column {mark.column + 1})"


def load_yaml(
    source: str | bytes | os.PathLike[str] | IO[str] | IO[bytes], *, name: str | None = None
) -> Any:
    """Parse YAML like ``yaml.safe_load``, with the C loader when available.

    ``source`` is YAML text (``str`` or ``bytes``), an open stream, or a path to a UTF-8 file
    (a :class:`~pathlib.Path` or anything with ``read_bytes``; a ``str`` is always text, never a
    file name). ``name`` is what errors call it (default: the file's name, else ``YAML text``).
    An empty document is ``None``, as with ``safe_load``. Raises :class:`YamlError`."""
    from culturebench.inputs import decode_text, read_text

    label = name
    try:
        if isinstance(source, os.PathLike):
            label = label or os.fspath(source).rsplit("/", 1)[-1] or os.fspath(source)
            source = read_text(Path(os.fspath(source)), what="a YAML file", name=label)
        elif hasattr(source, "read_bytes"):  # importlib Traversables
            label = label or str(getattr(source, "name", "") or source)
            source = decode_text(source.read_bytes(), label)
    except SourceError as exc:
        raise YamlError(exc.location, exc.detail) from None
    label = label or "YAML text"
    try:
        return yaml.load(source, Loader=SafeLoader)  # a safe loader (C or Python)
    except yaml.YAMLError as exc:
        row, at = _line(exc)
        problem = getattr(exc, "problem", None) or str(exc).strip().splitlines()[0]
        raise YamlError(Location(label, row), f"not valid YAML: {problem}{at}") from None
    except RecursionError:
        raise YamlError(Location(label), "YAML nested too deeply to read") from None
    except (ValueError, OverflowError, TypeError) as exc:  # e.g. a date that does not exist
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise YamlError(Location(label), f"a value YAML cannot build: {why}") from None
