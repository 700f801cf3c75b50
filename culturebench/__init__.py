"""culturebench: build, validate, document, publish and evaluate cultural-knowledge benchmarks.

The installed package has one import name. The repository's top-level folders are its
sub-packages: ``culturebench.builders`` (``builders/``), ``culturebench.validation``
(``validation/``), ``culturebench.cards`` (``cards/``), ``culturebench.eval`` (``eval/``) and
``culturebench.datasets`` (``datasets/``: one folder per dataset, declarations and code).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("culturebench")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"


class _BuiltinDatasetsFinder:
    """Finds ``culturebench.datasets`` in a source checkout (editable install), where it is
    the repository's top-level ``datasets/`` folder. That folder has no ``__init__.py`` on
    purpose, so it never shadows the Hugging Face ``datasets`` library when Python runs
    from the repository root; this finder serves it as a namespace package instead. In a
    wheel install the folder sits inside the package and the standard finders serve it."""

    @staticmethod
    def find_spec(fullname: str, path=None, target=None):  # MetaPathFinder protocol
        if fullname != "culturebench.datasets":
            return None
        from importlib.machinery import ModuleSpec

        from culturebench.errors import CultureBenchError
        from culturebench.registry import builtin_datasets_folder

        try:
            folder = builtin_datasets_folder()
        except CultureBenchError:
            return None
        spec = ModuleSpec(fullname, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
        return spec


def _serve_source_checkout() -> None:
    """In a source checkout imported without an install (or shadowing a wheel install from
    the checkout's root, where Python puts the current folder first on ``sys.path``), the
    sub-packages live in the repository's top-level folders: look for them there too, so the
    checkout is one consistent package rather than its ``culturebench/`` folder mixed with
    another install's sub-packages. In site-packages there is no ``setup.py`` beside the
    package, and nothing changes."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    checkout = (root / "setup.py").is_file() and (root / "eval" / "__init__.py").is_file()
    if checkout and str(root) not in __path__:
        __path__.append(str(root))


def _install_finder() -> None:
    import sys

    if not any(f is _BuiltinDatasetsFinder for f in sys.meta_path):
        sys.meta_path.append(_BuiltinDatasetsFinder)


_serve_source_checkout()
_install_finder()

__all__ = ["__version__"]
