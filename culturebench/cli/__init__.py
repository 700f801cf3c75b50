"""The ``culturebench`` command line (typer + rich), one module per command group:

- :mod:`~culturebench.cli.application`: the application, global options, the entry point;
- :mod:`~culturebench.cli.datasets`: ``version``, ``list``, ``info``, ``build``, ``validate``,
  ``card``, ``release``; :mod:`~culturebench.cli.urls`: ``check-urls``;
- :mod:`~culturebench.cli.eval_runs`, :mod:`~culturebench.cli.eval_scoring`,
  :mod:`~culturebench.cli.eval_models`, :mod:`~culturebench.cli.results`: ``eval ...``;
- :mod:`~culturebench.cli.corpus`: ``corpus ...``; :mod:`~culturebench.cli.export`: ``export ...``;
- shared: :mod:`~culturebench.cli.errors` (exit codes, the error policy),
  :mod:`~culturebench.cli.output` (consoles, plain values, tables),
  :mod:`~culturebench.cli.progress`, :mod:`~culturebench.cli.options` (every shared option,
  option groups, deprecated spellings), :mod:`~culturebench.cli.parsing`.

``app`` and ``main`` are read from :mod:`culturebench.cli.application` on first use, so importing a
helper module (a dataset's own commands do) does not assemble the application.
"""

from __future__ import annotations

from typing import Any

__all__ = ["app", "main"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from culturebench.cli import application as module

        return getattr(module, name)
    raise AttributeError(name)
