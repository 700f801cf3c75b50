"""culturebench: build, validate, document, publish and evaluate cultural-knowledge benchmarks.

The installed package has one import name. The repository's top-level folders are its
sub-packages: ``culturebench.builders`` (``builders/``), ``culturebench.validation``
(``validation/``), ``culturebench.cards`` (``cards/``), ``culturebench.eval`` (``eval/``) and
the declarative ``culturebench.datasets`` data (``datasets/``).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("culturebench")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
