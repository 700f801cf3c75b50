"""The records a run folder holds, typed: what ``run.json`` (:class:`RunInfo`), each line of
``samples.jsonl`` (:class:`Sample`) and ``results.json`` (:class:`Results`) may contain.

They are ``TypedDict`` s, not classes with behaviour: the files are JSON, written and read by
other tools too (Inspect, lm-evaluation-harness, Every Eval Ever, people with ``jq``), and a
record read from disk is the same value the run loop wrote. Every key is optional to the type
checker (``total=False``) because records of older runs lack later keys; which keys a finished
run always has is checked where the file is read (:func:`~culturebench.eval.run_folder.read_run`,
:func:`~culturebench.eval.run_folder.read_results`).

A sample line holds, besides the keys below, the fields of its task: the row's metadata
(``Task.meta``) and its scores (``Task.score``). Code that reads those takes a sample as
``Mapping[str, Any]``; a :class:`Sample` is one.

Who writes what: :mod:`~culturebench.eval.runner` (``eval run``), :mod:`~culturebench.eval.score`
(``eval score``) and :mod:`~culturebench.eval.merge` (``eval merge``) write all three;
:mod:`~culturebench.eval.run_folder` reads and checks them; :mod:`~culturebench.eval.run_report`,
:mod:`~culturebench.eval.paper_report`, :mod:`~culturebench.eval.every_eval_ever` and
:mod:`~culturebench.eval.hub_results` read results.
"""

from __future__ import annotations

from typing import Any, TypedDict


class DatasetPin(TypedDict, total=False):
    """The immutable dataset a run read (:class:`~culturebench.eval.dataset_ref.DatasetRef`)."""

    dataset: str
    source: str  # "hub" or "local"
    location: str  # repo id or folder
    requested_revision: str | None
    commit_sha: str | None
    manifest_sha256: str | None
    version: str | None


class ShardPart(TypedDict, total=False):
    """Which part of a run a folder holds (``--shard K/N``, :mod:`~culturebench.eval.shards`)."""

    index: int
    count: int


class RunInfo(TypedDict, total=False):
    """``run.json``: what a run is. Everything but ``coverage``, ``shard``, the model's
    ``versions``/``runtime`` and the location-only task options is its identity
    (:func:`~culturebench.eval.run_folder.identity`): a resume must match it."""

    # the dataset revision and task (task_identity)
    dataset: DatasetPin
    task: str
    task_options: dict[str, Any]
    config: str | None
    split: str | None
    location_options: list[str]
    # eval run
    languages: list[str]
    limit: int | None
    limit_rows: str
    model: dict[str, Any]
    prompt_sha256: dict[str, str]
    requests: int
    requests_sha256: str
    seeds: list[int]
    sampling_per_seed: dict[str, dict[str, Any]]
    coverage: dict[str, Any]
    shard: ShardPart
    # an analysis task: the pinned inputs it read
    inputs: dict[str, Any]
    # eval score: the recorded outputs it scored
    mode: str
    generations: list[dict[str, Any]]
    layout: str | None
    harness: str  # the harness whose logs were scored (inspect, lm-eval)
    matcher: dict[str, Any]
    answer_reader: dict[str, Any]  # a model reading the answers (eval/answers/model_reader.py)


class Provenance(RunInfo, total=False):
    """``results.json``'s ``provenance``: the run's :class:`RunInfo` (less coverage and shard)
    and the code that produced it."""

    culturebench_git: str | None
    culturebench_version: str
    packages: dict[str, str]


class Sample(TypedDict, total=False):
    """One line of ``samples.jsonl`` (the keys every task's samples share; the task's own
    fields come beside them)."""

    id: str  # request id, ``@<seed>`` appended when the run has seeds
    run: str  # the run key (:func:`~culturebench.eval.run_folder.run_key`) of ``eval run``
    seed: int | None
    prompt: str
    n_images: int
    output: Any  # the model's text; anything else is flagged ``invalid_output``
    invalid_output: str  # the JSON type of an output that was not text
    scored_chars: int  # a very long output was scored on this many characters
    image_sha256: str  # text-to-image runs: the stored PNG's hash (``output`` is its path)
    row_id: str


class Results(TypedDict, total=False):
    """``results.json``: the metrics of a run and where they came from."""

    coverage: dict[str, Any]
    provenance: Provenance
    skipped_rows: dict[str, int]
    samples: int
    invalid_outputs: int
    outputs_cut_for_scoring: int
    metrics: dict[str, Any]
    shard: str  # a part of a run: "K/N" (its metrics cover only that part)
    # eval score
    items: int
    seeds: list[int]
    duplicate_generations: int
    judge_missing: int
    judge_unparsed: int
    answer_reader: dict[str, Any]


class OutputCounts(TypedDict):
    """Outputs that were not text, and outputs scored in part (beside every run's metrics)."""

    invalid_outputs: int
    outputs_cut_for_scoring: int
