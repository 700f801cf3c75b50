"""YAML parsing in one place, with libyaml's C loader where PyYAML was built with it.

``yaml.safe_load`` uses the pure-Python ``SafeLoader``; ``yaml.CSafeLoader`` resolves the same
tags to the same Python objects (the safe schema: no arbitrary objects) at several times the
speed. Use :func:`load_yaml` instead of ``yaml.safe_load`` everywhere.
"""

from __future__ import annotations

import os
from typing import IO, Any

import yaml

#: The fastest safe loader this PyYAML offers (``CSafeLoader`` needs libyaml).
SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(source: str | bytes | os.PathLike[str] | IO[str] | IO[bytes]) -> Any:
    """Parse YAML like ``yaml.safe_load``, with the C loader when available.

    ``source`` is YAML text (``str`` or ``bytes``), an open stream, or a path to a UTF-8 file
    (a :class:`~pathlib.Path` or anything with ``read_text``; a ``str`` is always text, never a
    file name). An empty document is ``None``, as with ``safe_load``."""
    if isinstance(source, os.PathLike) or hasattr(source, "read_text"):  # also importlib Traversables
        source = source.read_text(encoding="utf-8")
    return yaml.load(source, Loader=SafeLoader)  # a safe loader (C or Python)
