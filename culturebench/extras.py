"""Which optional extra installs a package: a missing one is named with its install line
(``pip install 'culturebench[eval]'``), never shown as a bare ``ModuleNotFoundError``."""

from __future__ import annotations

# import name -> the extra of pyproject.toml that installs it
EXTRA_OF = {
    **dict.fromkeys(("torch", "transformers", "tokenizers", "rapidfuzz", "pymorphy3", "matplotlib",
                     "krippendorff", "diffusers", "gguf", "msgspec"), "eval"),
    **dict.fromkeys(("ahocorasick_rs", "dask", "distributed", "zstandard", "isal", "numba"), "corpus"),
    **dict.fromkeys(("inspect_ai", "lm_eval", "jsonschema", "fastjsonschema"), "interop"),
    "vllm": "gpu",
    "vl_convert": "site",
    "playwright": "dev",
}  # fmt: skip


def missing_extra(exc: BaseException | None) -> tuple[str, str] | None:
    """(extra, package) when ``exc``, or an exception it was raised from, is a package of an
    optional extra that is not installed."""
    for _ in range(10):
        if exc is None:
            return None
        if isinstance(exc, ModuleNotFoundError) and exc.name:
            top = exc.name.split(".")[0]
            if top in EXTRA_OF:
                return EXTRA_OF[top], top
        exc = exc.__cause__ or exc.__context__
    return None


def install_line(extra: str, package: str) -> str:
    """The one line for a command that needs a missing extra."""
    return f"this needs {package}, which is not installed: pip install 'culturebench[{extra}]'"
