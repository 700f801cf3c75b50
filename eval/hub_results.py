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

import contextlib
import math
import os
import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError, UsageError
from culturebench.eval.hub_runs import RunResult, Value, culturebench_version, model_label, read_run_result
from culturebench.eval.records import Sample
from culturebench.safe_http import redact

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
    seeds = result.results.get("seeds") or prov.get("seeds")
    if seeds:
        parts.append("seeds: " + ",".join(map(str, seeds)))
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


def _results_output() -> Any:
    """The output kind of ``eval results`` (its folder holds ``.eval_results`` and
    ``every_eval_ever``, and a marker)."""
    from culturebench.outputs import OutputKind

    return OutputKind("eval-results", (EVAL_RESULTS_DIR, EEE_DIR))


EEE_DIR = "every_eval_ever"


def export_results(
    folders: Sequence[str | Path],
    out: str | Path,
    *,
    dataset_id: str = DEFAULT_DATASET_ID,
    source_url: str | None = None,
    model_id: str | None = None,
    organization: str = "unknown",
    relationship: str = "third_party",
    overwrite: bool = False,
) -> Export:
    """Check ``out`` and read and check every run, build and validate every file, all before
    anything is written; then write ``out/.eval_results/<dataset>.yaml`` (one per dataset, one
    entry per run, in the order given) and each run's Every Eval Ever record and samples under
    ``out/every_eval_ever/data/``, staged beside ``out`` and renamed into place (so a refusal
    or an error leaves ``out`` as it was). ``out`` follows the package's output policy
    (:mod:`culturebench.outputs`): new, empty, or an earlier ``eval results`` output replaced
    with ``overwrite``; never a folder of anything else, a release, a run, or inside one.
    ``source_url`` may hold ``{dataset}``, ``{task}`` and ``{path}`` (the run's EEE samples
    file, relative to ``out``)."""
    from culturebench.eval import every_eval_ever as eee
    from culturebench.outputs import check_output, staged_output
    from culturebench.secrets import refuse_credentials

    eee.require_jsonschema()
    out = Path(out)
    _check_out_against_runs(out, folders)
    kind = _results_output()
    check_output(out, kind, overwrite=overwrite)
    runs = [read_run_result(folder) for folder in folders]
    samples = [_checked_samples(result) for result in runs]
    _check_distinct(runs)
    if model_id is None:
        _check_one_model(runs)
    if source_url is not None:
        _source_url(source_url, runs[0], "x")  # a bad placeholder: refused before any work
    records, entries = [], defaultdict(list)
    for result, lines in zip(runs, samples, strict=True):
        repo, revision = hub_dataset(result, dataset_id)
        record = eee.build(
            result,
            dataset_id=repo,
            revision=revision,
            model_id=model_id or eee.default_model_id(result),
            organization=organization,
            relationship=relationship,
            samples=lines,
        )
        eee.validate(record, out / EEE_DIR)
        records.append(record)
        relative = eee.paths(record, EEE_DIR)[1].as_posix()
        url = _source_url(source_url, result, relative)
        entries[result.dataset].append(eval_result_entry(result, dataset_id=dataset_id, source_url=url))
    texts = {}
    for dataset, items in entries.items():
        name = f"{EVAL_RESULTS_DIR}/{dataset}.yaml"
        texts[name] = eval_results_yaml(items)
        refuse_credentials(out / name, texts[name], formats=True)
    _check_unique_records(records, runs)
    with staged_output(out, kind, overwrite=overwrite) as staged:
        for record in records:
            eee.write(record, staged / EEE_DIR, validated=True)
        for name, text in texts.items():
            (staged / name).parent.mkdir(parents=True, exist_ok=True)
            (staged / name).write_text(text, encoding="utf-8")
    export = Export(runs=runs)
    export.every_eval_ever = [eee.paths(record, out / EEE_DIR) for record in records]
    export.eval_results = {name: out / name for name in texts}
    return export


def _check_out_against_runs(out: Path, folders: Sequence[str | Path]) -> None:
    """``out`` is none of the input runs, not inside one, and holds none of them (replacing
    it would delete a run)."""
    target = out.resolve()
    for folder in folders:
        run = Path(folder).resolve()
        if run == target:
            raise UsageError(f"--out {out} is the input run {folder}; write the results elsewhere")
        if target in run.parents:
            raise UsageError(f"--out {out} holds the input run {folder}; write the results elsewhere")
        if run in target.parents:
            raise UsageError(f"--out {out} is inside the input run {folder}; write the results elsewhere")


def check_value(result: RunResult) -> None:
    """The leaderboard value, and each group value it pools, is a number within the task's
    declared range (``hub.result.range``), with a whole sample count; else a one-line error
    naming ``results.json`` and the metric."""
    from culturebench.eval.run_folder import RESULTS

    rule, value = result.hub.result, result.value
    where = f"{result.folder / RESULTS}: {rule.metric}"
    bounds = f"[{_bound(rule.min_score)}, {_bound(rule.max_score)}]"
    items = [("", value.value, value.n), *((f" of group {g}", v, n) for g, (v, n) in value.groups.items())]
    for label, number, n in items:
        if not isinstance(number, int | float) or not math.isfinite(number):
            raise CultureBenchError(f"{where}{label} is {number!r}, not a number: no leaderboard value")
        low, high = rule.min_score, rule.max_score
        if (low is not None and number < low) or (high is not None and number > high):
            raise CultureBenchError(
                f"{where}{label} is {number!r}, outside the metric's range {bounds} (hub.result.range)"
            )
        if n is not None and (not isinstance(n, int | float) or not math.isfinite(n) or n < 0 or n != int(n)):
            raise CultureBenchError(f"{where}{label}: its sample count n is {n!r}, not a whole number from 0")


def _bound(value: float | None) -> str:
    return "unbounded" if value is None else f"{value:g}"


def _checked_samples(result: RunResult) -> list[Sample]:
    """The run's samples, read whole (a cut or corrupt line is an error naming the line), and
    checked against ``results.json``: the value checked (:func:`check_value`), the number of
    samples, and the leaderboard value and its sample count recomputed from the samples by
    the task's own ``aggregate``."""
    from culturebench.eval.hub_runs import leaderboard_value
    from culturebench.eval.run_folder import RESULTS, SAMPLES, read_run_samples
    from culturebench.eval.tasks import get_task

    check_value(result)
    samples = read_run_samples(result.folder)
    where = f"{result.folder / SAMPLES} disagrees with {RESULTS}"
    recorded = result.results.get("samples")
    if isinstance(recorded, int) and recorded != len(samples):
        raise CultureBenchError(f"{where}: it holds {len(samples)} samples, results.json says {recorded}")
    options = result.provenance.get("task_options") or {}
    try:
        task = get_task(result.dataset, result.task, **options)
        metrics = task.aggregate(samples)
        again = leaderboard_value(metrics, result.hub.result.metric, where=str(result.folder / SAMPLES))
    except CultureBenchError as exc:
        raise CultureBenchError(f"{where}: recomputing {result.hub.result.metric} fails: {exc}") from None
    except Exception as exc:  # a sample without the fields its task scores with
        raise CultureBenchError(
            f"{where}: recomputing {result.hub.result.metric} from the samples fails "
            f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"
        ) from None
    metric, value = result.hub.result.metric, result.value
    if again.n != value.n:
        raise CultureBenchError(f"{where}: {metric} over {again.n} samples, results.json says n={value.n}")
    same = math.isclose(again.value, value.value, rel_tol=1e-9, abs_tol=1e-12)
    if not same and not (math.isnan(again.value) and math.isnan(value.value)):
        raise CultureBenchError(
            f"{where}: {metric} recomputed from the samples is {again.value:.6g}, results.json says "
            f"{value.value:.6g}"
        )
    return samples


def _check_distinct(runs: Sequence[RunResult]) -> None:
    """No run given twice (the same folder under two names)."""
    seen: dict[Path, Path] = {}
    for result in runs:
        key = result.folder.resolve()
        if key in seen:
            raise UsageError(
                f"{result.folder} is given twice (also as {seen[key]}): each run is one leaderboard entry"
            )
        seen[key] = result.folder


def _check_unique_records(records: Sequence[Any], runs: Sequence[RunResult]) -> None:
    """No two runs are the same run (a copy: the same identity and samples give the same
    Every Eval Ever record), which would be two identical leaderboard entries."""
    seen: dict[str, RunResult] = {}
    for record, result in zip(records, runs, strict=True):
        if record.uuid in seen:
            raise UsageError(
                f"{result.folder} is the same run as {seen[record.uuid].folder} (same run.json and "
                "samples): each run is one leaderboard entry; give it once"
            )
        seen[record.uuid] = result


def _source_url(template: str | None, result: RunResult, path: str) -> str | None:
    if template is None:
        return None
    try:
        return template.format(dataset=result.dataset, task=result.task, path=path)
    except (KeyError, IndexError, ValueError, AttributeError):
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
DEFAULT_TIMEOUT = 60.0  # seconds: the deadline of the whole pull request, every Hub call in it


def open_pull_request(
    repo_id: str,
    files: dict[str, bytes],
    *,
    endpoint: str | None = None,
    message: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> str:
    """Open a pull request on the model repo ``repo_id`` adding ``files`` (path in the repo ->
    bytes) in one commit; return its URL. The endpoint is ``endpoint``, else ``HF_ENDPOINT``,
    else the Hub; the token is huggingface_hub's (``HF_TOKEN`` or a saved login). Every Hub
    call has a deadline: each request times out after ``timeout`` seconds, and so does the
    whole pull request (huggingface_hub retries some calls); a server that does not answer in
    time is a one-line error naming the URL (redacted) and whether anything may have been
    published."""
    from huggingface_hub import CommitOperationAdd, HfApi, constants, get_token

    if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
        raise UsageError(f"--timeout {timeout!r}: a number of seconds above 0")
    if constants.is_offline_mode():
        raise CultureBenchError(
            "HF_HUB_OFFLINE is set: cannot open a pull request (unset it, or leave out --to-repo)"
        )
    token = get_token()
    if not token:
        raise CultureBenchError(
            "no Hugging Face token: set HF_TOKEN (or run `hf auth login`) to open a pull request"
        )
    base = (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
    api = HfApi(endpoint=base, token=token)
    names = ", ".join(files)
    calls = _Calls()

    def commit() -> Any:
        return api.create_commit(
            repo_id=repo_id,
            repo_type="model",
            operations=[
                CommitOperationAdd(path_in_repo=path, path_or_fileobj=data) for path, data in files.items()
            ],
            commit_message=message or f"Add evaluation results ({names})",
            commit_description="Written by `culturebench eval results` (docs/hub-results.md).",
            create_pr=True,
        )

    with _hub_client(timeout, calls):
        done, info, error = _within(commit, timeout)
    where = f"cannot open a pull request on {repo_id}"
    if not done:
        raise CultureBenchError(
            f"{where}: {calls.stalled(base, repo_id, timeout)}; " + calls.published(base, repo_id)
        )
    if error is not None:
        url = _error_url(error) or base
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
        answered = _status_of(error) is not None
        tail = "nothing was published" if answered else calls.published(base, repo_id)
        raise CultureBenchError(f"{where}: {redact(url.split('?')[0])}: {redact(first)}; {tail}")
    if not info.pr_url:
        raise CultureBenchError(f"{repo_id}: the Hub made a commit but returned no pull request")
    return str(info.pr_url)


class _Calls:
    """The Hub requests of one pull request, in order: each URL and its outcome (None while
    it waits; an HTTP status; an exception's first line)."""

    def __init__(self) -> None:
        self.items: list[list[Any]] = []  # [url, outcome]
        self.lock = threading.Lock()

    def sent(self, url: str) -> None:
        with self.lock:
            self.items.append([url, None])

    def ended(self, url: str, outcome: str) -> None:
        with self.lock:
            for item in reversed(self.items):
                if item[0] == url and item[1] is None:
                    item[1] = outcome
                    return

    def stalled(self, base: str, repo_id: str, timeout: float) -> str:
        """Why the deadline passed: the repo's request still waiting for an answer (or the
        endpoint itself, when a lookup of huggingface_hub's own waits), else the last failure
        of a call huggingface_hub kept retrying."""
        with self.lock:
            items = [(url.split("?")[0], outcome) for url, outcome in self.items]
        limit = f"within {timeout:g} s (--timeout)"
        waiting = [url for url, outcome in items if outcome is None]
        if waiting:
            ours = [url for url in waiting if f"/api/models/{repo_id}/" in url]
            return f"{redact(ours[-1] if ours else base)} did not answer {limit}"
        if items:
            url, outcome = items[-1]
            return f"{redact(url)} still failing after retries ({redact(outcome)}), no success {limit}"
        return f"{redact(base)}: no request could be made {limit}"

    def published(self, base: str, repo_id: str) -> str:
        """What a pull request that did not finish may have published: nothing before its
        commit request was sent; after, perhaps the pull request (where to look)."""
        with self.lock:
            committed = any("/commit/" in url for url, _ in self.items)
        if committed:
            return (
                "the commit request was sent, so the pull request may have been opened: check "
                f"{redact(base)}/{repo_id}/discussions before trying again"
            )
        return "nothing was published"


def _within(call: Any, timeout: float) -> tuple[bool, Any, BaseException | None]:
    """Run ``call`` in a worker thread for at most ``timeout`` seconds: ``(finished, result,
    error)``. A call still running is left to its own request timeouts (a daemon thread: it
    never holds the process)."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:  # handed to the caller, which names it in one line
            box["error"] = exc

    thread = threading.Thread(target=work, name="culturebench-hub-call", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return False, None, None
    return True, box.get("result"), box.get("error")


@contextlib.contextmanager
def _hub_client(timeout: float, calls: _Calls) -> Iterator[None]:
    """huggingface_hub's HTTP client for the block: every request times out after ``timeout``
    seconds (its default client has none) and is recorded in ``calls`` with its outcome; the
    previous client factory is restored after (its shared client closed, so a call left
    running ends)."""
    from huggingface_hub import set_client_factory
    from huggingface_hub.utils import _http

    previous = getattr(_http, "_GLOBAL_CLIENT_FACTORY", _http.default_client_factory)

    def record(request: Any) -> None:
        calls.sent(str(request.url))

    def reply(response: Any) -> None:
        calls.ended(str(response.request.url), f"HTTP {response.status_code}")

    def factory() -> Any:
        client = previous()
        client.timeout = timeout
        hooks = client.event_hooks
        client.event_hooks = {
            **hooks,
            "request": [*hooks.get("request", []), record],
            "response": [*hooks.get("response", []), reply],
        }
        inner = getattr(client, "_transport", None)
        if inner is not None and hasattr(inner, "handle_request"):
            client._transport = _FailureRecorder(inner, calls)
        return client

    set_client_factory(factory)
    try:
        yield
    finally:
        set_client_factory(previous)


class _FailureRecorder:
    """A transport that records each request that fails without an answer (connection
    refused or dropped, timed out) in ``calls``, then lets the error go on."""

    def __init__(self, inner: Any, calls: _Calls) -> None:
        self.inner, self.calls = inner, calls

    def handle_request(self, request: Any) -> Any:
        try:
            return self.inner.handle_request(request)
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            self.calls.ended(str(request.url), f"{type(exc).__name__}: {first}")
            raise

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> _FailureRecorder:
        return self

    def __exit__(self, *args: Any) -> None:
        self.close()


def _error_url(error: BaseException) -> str | None:
    """The URL of the request an HTTP error is about, when it says."""
    for owner in (getattr(error, "response", None), error):
        try:
            request = getattr(owner, "request", None) if owner is not None else None
        except Exception:  # httpx raises when an error holds no request
            request = None
        if request is not None and getattr(request, "url", None) is not None:
            return str(request.url)
    return None


def _status_of(error: BaseException) -> int | None:
    """The HTTP status of the answer an error carries (None: the server never answered)."""
    response = getattr(error, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None
