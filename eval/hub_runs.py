"""A finished run read for the Hub: its files, the Hub declaration of its task (``hub:`` in the
dataset's ``prompts.yaml``) and its leaderboard value (:func:`leaderboard_value`): the task's
``hub.result.metric`` as ``results.json`` holds it, top level, or its one group's, or the
sample-weighted mean over its groups (each a mean over its samples; the schema's
:func:`~culturebench.eval.records.leaderboard_value`, which ``results.json``'s headline is too)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from culturebench.cards.hub_tasks import HubTask, hub_tasks
from culturebench.errors import CultureBenchError
from culturebench.eval.records import Pin, Provenance, Results, RunInfo, Value, leaderboard_value


@dataclass(frozen=True)
class RunResult:
    """One finished run read for the Hub: its files, its task's Hub declaration and value."""

    folder: Path
    run: RunInfo
    results: Results
    hub: HubTask
    value: Value
    samples_sha256: str
    finished: datetime

    @property
    def dataset(self) -> str:
        return str(self.results["provenance"]["dataset"]["dataset"])

    @property
    def task(self) -> str:
        return str(self.results["provenance"]["task"])

    @property
    def provenance(self) -> Provenance:
        return self.results["provenance"]

    @property
    def ref(self) -> Pin:
        return self.provenance["dataset"]


def read_run_result(folder: str | Path) -> RunResult:
    """A finished, whole run of a Hub task (``eval run`` or ``eval score`` output), with its
    leaderboard value; a one-line :class:`CultureBenchError` naming the folder otherwise."""
    from culturebench.eval.run_folder import RESULTS, SAMPLES, read_results, read_run, samples_sha256

    folder = Path(folder)
    if not folder.is_dir():
        raise CultureBenchError(f"{folder} is not a run folder (no such folder)")
    run = read_run(folder)
    results = read_results(folder)
    if results.get("shard"):
        raise CultureBenchError(
            f"{folder} is shard {results['shard']} of a run; join the shards first (culturebench eval merge)"
        )
    prov = results["provenance"]
    dataset, task = prov["dataset"].get("dataset"), prov["task"]
    declared = hub_tasks(dataset) if isinstance(dataset, str) else {}
    if task not in declared:
        raise CultureBenchError(
            f"{folder}: {dataset}/{task} is not a task of the Hub's eval.yaml (have: "
            f"{', '.join(declared) or 'none'})"
        )
    if prov["dataset"].get("source") not in ("hub", "local"):
        raise CultureBenchError(f"{folder}: the run read no dataset release, so it has no Hub dataset")
    if not (folder / SAMPLES).is_file():
        raise CultureBenchError(f"{folder}: no {SAMPLES}")
    value = leaderboard_value(results["metrics"], declared[task].result.metric, where=str(folder / RESULTS))
    finished = datetime.fromtimestamp(int((folder / RESULTS).stat().st_mtime), tz=timezone.utc)
    return RunResult(folder, run, results, declared[task], value, samples_sha256(folder), finished)


def culturebench_version(prov: Mapping[str, Any]) -> str:
    """The culturebench version a run's provenance records (``unknown`` when none)."""
    return str(
        prov.get("culturebench_version") or (prov.get("packages") or {}).get("culturebench") or "unknown"
    )


def model_label(model: dict[str, Any]) -> str:
    """The model a run's provenance names, a local folder by its name only (``tiny (a local
    folder)``): notes and records published on the Hub do not show the machine's paths."""
    name = str(model.get("model"))
    path = Path(name)
    return f"{path.name} (a local folder)" if path.is_absolute() else name


__all__ = [
    "RunResult",
    "Value",
    "culturebench_version",
    "leaderboard_value",
    "model_label",
    "read_run_result",
]
