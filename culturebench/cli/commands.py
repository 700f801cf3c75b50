"""Commands collected by a module and added to an application when it is assembled
(:mod:`culturebench.cli.application`), so importing a command module registers nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer


class CommandSet:
    """``@commands.command("name")`` marks a function as a command; :meth:`register` adds
    every marked command to a typer application, in the order they were declared."""

    def __init__(self) -> None:
        self._commands: list[tuple[str, dict[str, Any], Callable[..., Any]]] = []

    def command(self, name: str, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def mark(function: Callable[..., Any]) -> Callable[..., Any]:
            self._commands.append((name, options, function))
            return function

        return mark

    def register(self, app: typer.Typer) -> None:
        for name, options, function in self._commands:
            app.command(name, **options)(function)
