"""Where culturebench caches downloads (sources, images)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """Root of culturebench's download cache (``$CULTUREBENCH_CACHE`` or ``~/.cache``)."""
    env = os.environ.get("CULTUREBENCH_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "culturebench"
