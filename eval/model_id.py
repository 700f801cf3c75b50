"""Which model a run is, read from its provenance alone (the backend's ``describe()``): its
identity (:class:`ModelId`) and short name. Shared by the paper reports, which compare runs by
model, and the readers of run folders, which label them."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ModelId:
    """Which model a run is, from its results' ``provenance.model`` (the backend's
    ``describe()``): the model id (Hub id, local path, or for recorded outputs scored by ``eval
    score`` the files' names), its revision, the sha256 of local weights, the backend, the
    ``--model-arg`` options that change the outputs (e.g. ``gguf_file``) and, for recorded
    outputs, the ``eval score --layout`` they were read with."""

    model: str = "-"
    revision: str | None = None
    weights_sha256: str | None = None
    backend: str | None = None
    model_args: str = ""  # the identity options, as sorted JSON ("" when none)
    layout: str | None = None

    @classmethod
    def from_provenance(cls, prov: Mapping[str, Any]) -> ModelId:
        model = prov.get("model") or {}
        if not isinstance(model, dict):
            return cls(str(model or "-"))
        args = model.get("model_args") or {}
        backend = model.get("backend")
        return cls(
            str(model.get("model") or "-"),
            model.get("model_revision"),
            model.get("weights_sha256"),
            backend,
            json.dumps(args, sort_keys=True, default=str) if args else "",
            prov.get("layout") if backend == RECORDED and not model.get("named") else None,
        )

    @property
    def key(self) -> tuple[Any, ...]:
        """What makes two runs one model: local weights by their sha256 (wherever the folder
        is), a Hub id with its revision, recorded outputs by their layout (every task of one
        `eval score --layout`); with the identity ``--model-arg`` options."""
        if self.backend == RECORDED:
            return (RECORDED, self.layout or self.model)
        if self.weights_sha256:
            return ("sha256", self.weights_sha256.lower(), self.model_args)
        return ("id", self.model, self.revision, self.model_args)

    @property
    def name(self) -> str:
        """The last part of the model's path or Hub id (recorded outputs: their layout)."""
        if self.backend == RECORDED and self.layout:
            return self.layout
        return base_name(self.model)

    @property
    def detail(self) -> str:
        """What tells this model from another of the same name: a short weights sha256, the
        revision, the full id or path, or the identity options."""
        if self.weights_sha256:
            return self.weights_sha256[:8]
        parts = [p for p in (self.revision, self.model if self.model != self.name else "") if p]
        return ", ".join(parts) or self.model_args or self.model

    def matches(self, alias: Any) -> bool:
        """Whether a ``models:`` alias names this model: a string is the last path part of a Hub
        id or folder (case-insensitive); a mapping pins any of ``model`` (the same way),
        ``revision``, ``weights_sha256`` and, for recorded outputs, ``layout`` and ``files``
        (a glob every recorded file name matches, e.g. ``gpt35_*``), all of which must match."""
        if isinstance(alias, str):
            return base_name(alias).lower() == base_name(self.model).lower()
        checks = {
            "model": lambda v: base_name(str(v)).lower() == base_name(self.model).lower(),
            "revision": lambda v: str(v) == str(self.revision),
            "weights_sha256": lambda v: str(v).lower() == str(self.weights_sha256 or "").lower(),
            "layout": lambda v: self.backend == RECORDED and str(v) == str(self.layout),
            "files": lambda v: (
                self.backend == RECORDED
                and all(fnmatch.fnmatch(f.strip(), str(v)) for f in self.model.split(","))
            ),
        }
        return all(checks[k](v) for k, v in alias.items())


RECORDED = "recorded"  # the backend `eval score` records for outputs recorded elsewhere
ALIAS_KEYS = ("model", "revision", "weights_sha256", "layout", "files")


def base_name(model: str) -> str:
    """The last part of a Hub id or folder (``facebook/dinov2-giant`` -> ``dinov2-giant``)."""
    return model.rstrip("/").rsplit("/", 1)[-1]
