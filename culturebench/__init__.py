"""culturebench: build, validate, document, publish and evaluate cultural-knowledge benchmarks.

The installed package has one import name. The repository's top-level folders are its
sub-packages through committed relative links in this folder (``culturebench/eval`` ->
``../eval``, likewise ``builders``, ``validation``, ``cards`` and ``datasets``: one folder per
dataset, declarations and code); see docs/layout.md. Nothing is patched at import time: what
Python imports is the tree on disk, the one static tools read.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("culturebench")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
