"""A backend of our own interface (not a fake of an external API) that answers every prompt
with a fixed text, or with texts chosen per prompt: makes aggregate metrics checkable by hand."""

from __future__ import annotations

from collections.abc import Callable

from culturebench.eval.backends.base import Backend


class ScriptedBackend(Backend):
    name = "scripted"
    CACHEABLE = False  # two scripts under one model name answer differently

    def __init__(self, answer: str | Callable[[str], str], model: str = "scripted") -> None:
        super().__init__(model)
        self.answer = answer

    def generate(self, requests):
        return [self.answer(r.prompt) if callable(self.answer) else self.answer for r in requests]
