"""Finished runs as Hub leaderboard entries (``.eval_results/<dataset>.yaml`` in a model repo)
and as Every Eval Ever records (:mod:`culturebench.eval.every_eval_ever`), and the pull
request that adds the entries to a model repo (``culturebench eval results``).

One entry per run, built with huggingface_hub's own ``EvalResultEntry``: ``dataset.id`` the
Hub dataset (the run's own repo when it read the Hub, else ``--dataset-id``), ``task_id`` the
culturebench task name (= the release's ``eval.yaml`` task id), ``dataset.revision`` the commit
the run read (none for a local release), ``value`` the task's leaderboard metric
(``hub.result.metric`` in the dataset's ``prompts.yaml``) as ``results.json`` holds it: its
top-level value, or its one language group's, or the sample-weighted mean over the groups
(each a mean over its samples), ``date`` the day ``results.json`` was written, ``notes`` what
produced the number. docs/hub-results.md describes every field.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError, UsageError
from culturebench.eval.hub_runs import RunResult, Value, culturebench_version, model_label, read_run_result

EVAL_RESULTS_DIR = ".eval_results"
DEFAULT_DATASET_ID = "culturebench/{dataset}"


def hub_dataset(result: RunResult, dataset_id: str = DEFAULT_DATASET_ID) -> tuple[str, str | None]:
    """``(Hub dataset id, revision)``: the repo and commit a Hub run read; for a local release,
    ``dataset_id`` (``{dataset}`` filled in) and no revision."""
    ref = result.ref
    if ref.get("source") == "hub":
        return str(ref["location"]), ref.get("commit_sha")
    try:
        return dataset_id.format(dataset=result.dataset), None
    except (KeyError, IndexError, ValueError):
        raise UsageError(f"--dataset-id {dataset_id!r}: the only placeholder is {{dataset}}") from None


def notes(result: RunResult, *, with_samples: bool = True) -> str:
    """What produced the value, in one line: scorer and metric, model and sampling, languages,
    seeds, options, limit, dataset revision, samples file."""
    from culturebench.cards.eval_yaml import inspect_task_name

    prov, value = result.provenance, result.value
    parts = [
        f"culturebench {culturebench_version(prov)}"
        + (f" (git {prov['culturebench_git']})" if prov.get("culturebench_git") else ""),
        f"scorer: culturebench {result.dataset}/{result.task} "
        f"(Inspect {inspect_task_name(result.dataset, result.task)})",
        _value_note(result.hub.result.metric, value)
        + (" (lower is better)" if result.hub.result.lower_is_better else ""),
    ]
    parts += _model_notes(prov.get("model") or {})
    if prov.get("languages"):
        parts.append("languages: " + ", ".join(map(str, prov["languages"])))
    if result.results.get("seeds") or prov.get("seeds"):
        parts.append("seeds: " + ",".join(map(str, result.results.get("seeds") or prov.get("seeds"))))
    if prov.get("task_options"):
        parts.append(
            "task options: " + ", ".join(f"{k}={v}" for k, v in sorted(prov["task_options"].items()))
        )
    if prov.get("limit"):  # how --limit chose the rows (the run's coverage says)
        from culturebench.eval.coverage import coverage_of, limit_text

        parts.append(f"limit: {limit_text(coverage_of(result.results))}")
    parts.append(_dataset_note(result))
    for item in prov.get("generations") or []:
        parts.append(f"recorded outputs: {Path(str(item.get('file'))).name} sha256 {item.get('sha256')}")
    if with_samples:
        parts.append(f"samples: {result.folder.name}/samples.jsonl sha256 {result.samples_sha256}")
    return "; ".join(parts)


def _value_note(metric: str, value: Value) -> str:
    text = f"value: {metric}" + (f" over {value.n} samples" if value.n is not None else "")
    if len(value.groups) > 1:
        text += ", the sample-weighted mean of " + ", ".join(
            f"{group} {v:.4g} (n={n})" for group, (v, n) in value.groups.items()
        )
    elif value.groups:
        text += f" (group {next(iter(value.groups))})"
    if value.ci95 is not None:
        text += f", 95% CI [{value.ci95[0]:.4g}, {value.ci95[1]:.4g}]"
    elif value.sem is not None:
        text += f", SEM {value.sem:.4g}"
    return text


def _model_notes(model: dict[str, Any]) -> list[str]:
    out = [f"model: {model_label(model)} via {model.get('backend')}"]
    if model.get("model_revision"):
        out[0] += f" at revision {model['model_revision']}"
    if model.get("weights_sha256"):
        out[0] += f" (weights sha256 {model['weights_sha256']})"
    sampling = model.get("sampling") or {}
    if sampling:
        greedy = " (greedy)" if sampling.get("temperature") == 0.0 else ""
        out.append("sampling: " + ", ".join(f"{k}={v}" for k, v in sorted(sampling.items())) + greedy)
    if model.get("model_args"):
        out.append("model args: " + ", ".join(f"{k}={v}" for k, v in sorted(model["model_args"].items())))
    return out


def _dataset_note(result: RunResult) -> str:
    ref = result.ref
    if ref.get("source") == "hub":
        requested = ref.get("requested_revision") or "main"
        return f"dataset: {ref.get('location')}@{ref.get('commit_sha')} (requested {requested})"
    return (
        f"dataset: read a local release {ref.get('version')} (manifest sha256 {ref.get('manifest_sha256')}), "
        "not a Hub revision, so no revision is given"
    )


# ------------------------------------------------------------------------- .eval_results
def eval_result_entry(
    result: RunResult, *, dataset_id: str = DEFAULT_DATASET_ID, source_url: str | None = None
) -> Any:
    """The run as huggingface_hub's ``EvalResultEntry`` (``source`` only with a URL; without
    one the notes name the samples file and its sha256)."""
    from huggingface_hub import EvalResultEntry

    repo, revision = hub_dataset(result, dataset_id)
    return EvalResultEntry(
        dataset_id=repo,
        task_id=result.task,
        value=result.value.value,
        dataset_revision=revision,
        date=result.finished.date().isoformat(),
        source_url=source_url,
        source_name=f"culturebench samples of {result.dataset}/{result.task}" if source_url else None,
        notes=notes(result, with_samples=source_url is None),
    )


def eval_results_yaml(entries: Sequence[Any]) -> str:
    """A ``.eval_results`` file: the YAML list of entries (dates quoted, as the spec asks)."""
    import yaml
    from huggingface_hub import eval_result_entries_to_yaml

    return yaml.safe_dump(
        eval_result_entries_to_yaml(list(entries)), allow_unicode=True, sort_keys=False, width=100
    )


# ------------------------------------------------------------------------------ the export
@dataclass
class Export:
    """What ``eval results`` wrote: the ``.eval_results`` files (path in the model repo ->
    local path) and the Every Eval Ever files of each run."""

    eval_results: dict[str, Path] = field(default_factory=dict)
    every_eval_ever: list[tuple[Path, Path]] = field(default_factory=list)
    runs: list[RunResult] = field(default_factory=list)


def export_results(
    folders: Sequence[str | Path],
    out: str | Path,
    *,
    dataset_id: str = DEFAULT_DATASET_ID,
    source_url: str | None = None,
    model_id: str | None = None,
    organization: str = "unknown",
    relationship: str = "third_party",
) -> Export:
    """Read every run (all before writing anything), then write ``out/.eval_results/<dataset>.yaml``
    (one per dataset, one entry per run, in the order given) and each run's Every Eval Ever
    record and samples under ``out/every_eval_ever/data/``. ``source_url`` may hold ``{dataset}``,
    ``{task}`` and ``{path}`` (the run's EEE samples file, relative to ``out``)."""
    from culturebench.atomic import write_text_atomic
    from culturebench.eval import every_eval_ever as eee
    from culturebench.eval.run_folder import check_out_dir
    from culturebench.secrets import refuse_credentials

    eee.require_jsonschema()
    out = Path(out)
    check_out_dir(out)
    runs = [read_run_result(folder) for folder in folders]
    if model_id is None:
        _check_one_model(runs)
    export = Export(runs=runs)
    entries: dict[str, list[Any]] = defaultdict(list)
    for result in runs:
        repo, revision = hub_dataset(result, dataset_id)
        record = eee.build(
            result,
            dataset_id=repo,
            revision=revision,
            model_id=model_id or eee.default_model_id(result),
            organization=organization,
            relationship=relationship,
        )
        paths = eee.write(record, out / "every_eval_ever")
        export.every_eval_ever.append(paths)
        url = _source_url(source_url, result, paths[1].relative_to(out).as_posix())
        entries[result.dataset].append(eval_result_entry(result, dataset_id=dataset_id, source_url=url))
    for dataset, items in entries.items():
        path = out / EVAL_RESULTS_DIR / f"{dataset}.yaml"
        text = eval_results_yaml(items)
        refuse_credentials(path, text, formats=True)
        write_text_atomic(path, text)
        export.eval_results[f"{EVAL_RESULTS_DIR}/{dataset}.yaml"] = path
    return export


def _source_url(template: str | None, result: RunResult, path: str) -> str | None:
    if template is None:
        return None
    try:
        return template.format(dataset=result.dataset, task=result.task, path=path)
    except (KeyError, IndexError, ValueError):
        raise UsageError(
            f"--source-url {template!r}: the placeholders are {{dataset}}, {{task}} and {{path}}"
        ) from None


def _check_one_model(runs: Sequence[RunResult]) -> None:
    """One model per call (the entries go to one model repo), unless ``--model-id`` says so."""
    models = {str((r.provenance.get("model") or {}).get("model")) for r in runs}
    if len(models) > 1:
        raise UsageError(
            f"the runs are of {len(models)} models ({', '.join(sorted(models))}); give the runs of one "
            "model, or --model-id ORG/NAME when they are one model recorded in several files"
        )


# ------------------------------------------------------------------------- pull request
def open_pull_request(
    repo_id: str, files: dict[str, bytes], *, endpoint: str | None = None, message: str | None = None
) -> str:
    """Open a pull request on the model repo ``repo_id`` adding ``files`` (path in the repo ->
    bytes) in one commit; return its URL. The endpoint is ``endpoint``, else ``HF_ENDPOINT``,
    else the Hub; the token is huggingface_hub's (``HF_TOKEN`` or a saved login)."""
    from huggingface_hub import CommitOperationAdd, HfApi, constants, get_token

    if constants.is_offline_mode():
        raise CultureBenchError(
            "HF_HUB_OFFLINE is set: cannot open a pull request (unset it, or leave out --to-repo)"
        )
    token = get_token()
    if not token:
        raise CultureBenchError(
            "no Hugging Face token: set HF_TOKEN (or run `hf auth login`) to open a pull request"
        )
    api = HfApi(endpoint=endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT, token=token)
    names = ", ".join(files)
    try:
        info = api.create_commit(
            repo_id=repo_id,
            repo_type="model",
            operations=[
                CommitOperationAdd(path_in_repo=path, path_or_fileobj=data) for path, data in files.items()
            ],
            commit_message=message or f"Add evaluation results ({names})",
            commit_description="Written by `culturebench eval results` (docs/hub-results.md).",
            create_pr=True,
        )
    except Exception as exc:  # HTTP errors, no such repo, no permission, connection refused
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise CultureBenchError(f"cannot open a pull request on {repo_id}: {first}") from None
    if not info.pr_url:
        raise CultureBenchError(f"{repo_id}: the Hub made a commit but returned no pull request")
    return str(info.pr_url)
