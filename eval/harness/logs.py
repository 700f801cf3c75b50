"""Logs written by other harnesses, read as generations for ``eval score``: Inspect ``.eval``
logs (through ``inspect_ai.log.read_eval_log``) and lm-evaluation-harness ``--log_samples``
files (``samples_<task>_<time>.jsonl`` beside their ``results_<time>.json``).

Each log names its culturebench task, the model and the settings it ran with (carried into
``run.json`` so ``eval paper`` sets that model beside the paper's rows) and the release its
requests were built from (used when ``eval score`` is given no release)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError, Location, SourceError
from culturebench.eval.harness.common import parse_harness_name
from culturebench.file_memo import FileMemo

INSPECT = "inspect-ai"
LM_EVAL = "lm-eval"


@dataclass
class HarnessLog:
    """One harness log: its task, its answers (as ``eval score`` generations), the model and
    settings it ran with, and the release it was made from (when it says)."""

    path: Path
    harness: str  # INSPECT or LM_EVAL
    dataset: str
    task: str
    generations: list[Any]  # culturebench.eval.generation.Generation
    model: dict[str, Any]
    pin: dict[str, Any] | None = None
    details: dict[str, Any] = field(default_factory=dict)


def harness_of(path: Path) -> str | None:
    """Which harness wrote ``path`` (None: a plain generations file)."""
    if path.suffix == ".eval":
        return INSPECT
    if path.suffix == ".json" and path.is_file() and _inspect_json(path):
        return INSPECT
    if path.suffix == ".jsonl" and path.name.startswith("samples_") and path.is_file():
        with open(path, encoding="utf-8", errors="replace") as handle:
            first = handle.readline()
        try:
            record = json.loads(first)
        except ValueError:
            return None
        if isinstance(record, dict) and {"doc", "resps", "doc_id"} <= set(record):
            return LM_EVAL
    return None


def _inspect_json(path: Path) -> bool:
    """Whether ``path`` is an Inspect log in its JSON format (``--log-format json``): an
    object whose first keys are Inspect's ``version``, ``status`` and ``eval``."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        head = handle.read(4096)
    return all(f'"{key}"' in head for key in ("version", "status", "eval")) and head.lstrip().startswith("{")


# every task of one `eval score` (and the command's choice of tasks) reads the same logs
_LOGS: FileMemo[HarnessLog] = FileMemo()


def read_harness_log(path: Path) -> HarnessLog:
    """The log at ``path`` (read once per process while unchanged)."""
    if not path.is_file():
        raise SourceError(Location(str(path)), "no such file" if not path.exists() else "not a file")
    return _LOGS.get(path, lambda p: read_inspect(p) if harness_of(p) == INSPECT else read_lm_eval(p))


# ----------------------------------------------------------------------------- Inspect
def read_inspect(path: Path) -> HarnessLog:
    """An Inspect ``.eval`` (or ``.json``) log of a culturebench task. Epoch ``k`` of a sample
    is the paper's ``k``-th seed when the task ran the paper's seeds, else seed ``k - 1`` (one
    epoch: no seed)."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise CultureBenchError(
            f"{path.name} is an Inspect log: reading it needs inspect-ai "
            "(pip install 'culturebench[interop]')"
        ) from None
    from culturebench.eval.generation import Generation

    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # not a zip, a damaged or foreign log
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise SourceError(Location(path.name), f"not a readable Inspect log: {first}") from None
    if log.status != "success":
        raise SourceError(
            Location(path.name),
            "Inspect log of a run that did not finish "
            + (f"(status {log.status})" if log.status else "(the log records no status)"),
        )
    info = (log.eval.metadata or {}).get("culturebench") or {}
    dataset, task = _task_of(path, info.get("dataset"), info.get("task"), log.eval.task)
    if log.samples is None:
        raise SourceError(
            Location(path.name, None, "samples"),
            "the log holds no samples (samples: null; was it written with --no-log-samples?): "
            "nothing to score",
        )
    if not log.samples:
        raise SourceError(Location(path.name, None, "samples"), "the log holds 0 samples: nothing to score")
    seeds = info.get("seeds") or None
    if seeds is not None and (
        not isinstance(seeds, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in seeds)
    ):
        raise SourceError(
            Location(path.name, None, "metadata.culturebench.seeds"), "not a list of whole numbers"
        )
    epochs = _inspect_epochs(path, log.eval.config.epochs, [s.epoch for s in log.samples])
    generations = []
    for number, sample in enumerate(log.samples, start=1):
        if sample.error:
            raise SourceError(
                Location(path.name, number, "error"), f"sample {sample.id!r} failed: {sample.error}"
            )
        seed = _epoch_seed(sample.epoch, epochs, seeds)
        generations.append(Generation(str(sample.id), seed, sample.output.completion, path.name, number))
    config = log.plan.config.model_dump(exclude_none=True)
    sampling = {
        "max_new_tokens": config.get("max_tokens"),
        "temperature": config.get("temperature"),
        "seed": config.get("seed"),
    }
    model = {
        "backend": INSPECT,
        "model": log.eval.model,
        "model_args": log.eval.model_args or {},
        "sampling": {k: v for k, v in sampling.items() if v is not None},
        "versions": dict(log.eval.packages or {}),
        "harness": {
            "name": "inspect_ai",
            "version": (log.eval.packages or {}).get("inspect_ai"),
            "task": log.eval.task,
            "task_args": {k: v for k, v in (log.eval.task_args or {}).items() if v is not None},
            "epochs": epochs,
            "generate_config": config,
            "log": path.name,
            "created": log.eval.created,
        },
    }
    return HarnessLog(path, INSPECT, dataset, task, generations, model, info.get("pin"), {"epochs": epochs})


def _inspect_epochs(path: Path, declared: Any, epochs: list[Any]) -> int:
    """How many epochs an Inspect log holds: what its config declares, or more when its
    samples carry later epochs (a log whose config lost its ``epochs``: every epoch is still a
    separate answer, read as its own seed). An epoch that is not a whole number from 1 is an
    error naming the sample."""
    for number, epoch in enumerate(epochs, start=1):
        if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 1:
            raise SourceError(
                Location(path.name, number, "epoch"), f"epoch {epoch!r} is not a whole number from 1"
            )
    count = declared if isinstance(declared, int) and not isinstance(declared, bool) and declared > 0 else 1
    return max(count, *epochs)


def _epoch_seed(epoch: int, epochs: int, seeds: list[int] | None) -> int | None:
    """The seed of Inspect epoch ``epoch`` (1-based): none for a one-epoch run, the paper's
    seed of that index when the run used the paper's seeds (one for every epoch), else
    ``epoch - 1`` (for every epoch alike, so two epochs never share a seed)."""
    if epochs <= 1:
        return None
    return seeds[epoch - 1] if seeds and epochs <= len(seeds) else epoch - 1


def check_log_release(logs: list[HarnessLog], ref: Any, option: str) -> None:
    """Each log was made from the release ``ref`` that ``option`` (``--local``, ``--revision``,
    ``--repo``) names: a log whose recorded release is provably another one (another manifest
    sha256, another Hub commit, another version) is an error naming both."""
    from culturebench.eval.dataset_ref import DatasetRef

    given = ref.to_pin() if isinstance(ref, DatasetRef) else dict(ref)
    for log in logs:
        pin = log.pin
        if not isinstance(pin, dict):
            continue
        if _differs(pin, given):
            raise SourceError(
                Location(log.path.name, None, "release"),
                f"the log was made from {_release_text(pin)}, but {option} names {_release_text(given)}: "
                f"score it against the release it was made from (or leave out {option} to use that one)",
            )


def _differs(pin: dict[str, Any], given: dict[str, Any]) -> bool:
    """Whether two release references are provably different releases."""
    if pin.get("dataset") != given.get("dataset"):
        return True
    for key in ("manifest_sha256", "commit_sha"):
        if pin.get(key) and given.get(key):
            return pin[key] != given[key]
    left, right = (str(x.get("version") or "").removeprefix("v") for x in (pin, given))
    return bool(left and right and left != right)


def _release_text(ref: dict[str, Any]) -> str:
    """A release reference in words: its dataset, version and content hash or commit."""
    version = f" {ref['version']}" if ref.get("version") else ""
    if ref.get("source") == "hub":
        return f"{ref.get('dataset')}{version} ({ref.get('location')}@{str(ref.get('commit_sha'))[:12]})"
    return f"{ref.get('dataset')}{version} (manifest sha256 {str(ref.get('manifest_sha256'))[:12]})"


# ------------------------------------------------------------------------- lm-eval
def read_lm_eval(path: Path) -> HarnessLog:
    """An lm-evaluation-harness ``--log_samples`` file of an exported culturebench task; the
    model and generation settings come from the ``results_<time>.json`` beside it."""
    from culturebench.eval.generation import Generation
    from culturebench.eval.tasks.base import split_job_id
    from culturebench.inputs import read_jsonl

    name, _, stamp = path.stem[len("samples_") :].rpartition("_")
    results = _lm_eval_results(path, stamp)
    where = str(results.get("_file"))
    config = _object(_object(results.get("configs"), where, "configs").get(name), where, f"configs.{name}")
    metadata = _object(config.get("metadata"), where, f"configs.{name}.metadata")
    pin_info = _object(metadata.get("culturebench"), where, f"configs.{name}.metadata.culturebench")
    dataset, task = _task_of(path, pin_info.get("dataset"), pin_info.get("task"), name)
    seeds, seeds_from = _lm_eval_seeds(config, results)
    generations = []
    for number, record in read_jsonl(path, what="an lm-eval samples file"):
        doc = record.get("doc")
        if not isinstance(doc, dict) or not isinstance(doc.get("id"), str):
            raise SourceError(
                Location(path.name, number, "doc.id"),
                "no culturebench id in the document (not a task exported by `culturebench export lm-eval`)",
            )
        if "task" in doc and not _same_task(doc["task"], dataset, task):
            raise SourceError(
                Location(path.name, number, "doc.task"),
                f"a document of {doc['task']!r} in a log of {dataset}/{task}: the file holds another task's "
                "samples",
            )
        output = lm_eval_answer(record, Location(path.name, number))
        request, seed_text = split_job_id(doc["id"])
        seed = _lm_eval_seed(seed_text, seeds, seeds_from, Location(path.name, number, "doc.id"), doc["id"])
        generations.append(Generation(request, seed, output, path.name, number))
    run_config = _object(results.get("config"), where, "config")
    model_args = run_config.get("model_args")
    model = {
        "backend": LM_EVAL,
        "model": _lm_eval_model(results, path),
        "model_args": _model_args(model_args),
        "sampling": _lm_eval_sampling(
            _object(config.get("generation_kwargs"), where, f"configs.{name}.generation_kwargs")
        ),
        "versions": {
            "lm_eval": str(results.get("lm_eval_version", "")),
            "transformers": str(results.get("transformers_version", "")),
        },
        "harness": {
            "name": "lm_eval",
            "version": results.get("lm_eval_version"),
            "task": name,
            "model_type": run_config.get("model"),
            "generation_kwargs": config.get("generation_kwargs"),
            "chat_template": bool(results.get("chat_template")),
            "samples": path.name,
            "results": results.get("_file"),
            "date": results.get("date"),
        },
    }
    return HarnessLog(path, LM_EVAL, dataset, task, generations, model, pin_info.get("pin"))


def _same_task(named: Any, dataset: str, task: str) -> bool:
    """Whether a document's ``<dataset>/<task>`` is ``dataset``/``task`` (old task names
    count as the task's current name)."""
    from culturebench.eval.tasks import canonical_name

    if not isinstance(named, str):
        return False
    other, _, name = named.partition("/")
    return other == dataset and canonical_name(other, name) == canonical_name(dataset, task)


def lm_eval_answer(record: dict[str, Any], where: Location) -> str:
    """The one answer of an lm-eval sample line, in every shape lm-eval writes it:
    ``filtered_resps`` as a list with one string per request (the usual ``take_first``
    filter), a list of lists (no filter: every generation of the request), or a plain string;
    else ``resps`` (a list of lists). Anything but exactly one answer text is an error naming
    the line and the field (a string is never read letter by letter)."""
    for key in ("filtered_resps", "resps"):
        if key not in record or record[key] is None:
            continue
        value = record[key]
        at = Location(where.file, where.row, key)
        while isinstance(value, list) and len(value) == 1:  # one request, one generation
            value = value[0]
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            if not value:
                raise SourceError(at, "empty: no answer")
            raise SourceError(
                at, f"holds {len(value)} answers for one document; culturebench scores exactly one"
            )
        raise SourceError(at, f"expected the answer text, got {_json_type(value)}")
    raise SourceError(Location(where.file, where.row, "resps"), "no answer (no filtered_resps or resps)")


def _object(value: Any, file: str, field: str) -> dict[str, Any]:
    """``value`` when it is a JSON object, ``{}`` when it is absent (null); else an error naming
    ``file`` and ``field`` (a results file edited or of another tool)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SourceError(Location(file, None, field), f"expected an object, got {_json_type(value)}")
    return value


def _json_type(value: Any) -> str:
    """What JSON type ``value`` is, for an error."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _lm_eval_seeds(config: dict[str, Any], results: dict[str, Any]) -> tuple[list[int] | None, str]:
    """The seeds the exported task asked (``metadata.culturebench.seeds`` of its config in
    ``results_<time>.json``) and where that comes from, for errors; ``(None, "")`` when no
    results file says (then every seed the ids carry is read as it is)."""
    info = _object(config.get("metadata"), str(results.get("_file")), "metadata").get("culturebench")
    if not (isinstance(info, dict) and "seeds" in info):
        return None, ""
    seeds = info["seeds"]
    if seeds is not None and (
        not isinstance(seeds, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in seeds)
    ):
        raise SourceError(
            Location(str(results.get("_file")), None, "metadata.culturebench.seeds"),
            "not a list of whole numbers",
        )
    return (seeds or None), f"metadata.culturebench.seeds of {results.get('_file')}"


def _lm_eval_seed(text: str, seeds: list[int] | None, source: str, where: Location, job: str) -> int | None:
    """The seed of an lm-eval document id ``<request>@<seed>``: one the exported task asked
    (when ``source`` says which), else an error naming the line (a log of another seed, or of
    a task run without seeds)."""
    if not text:
        if seeds and source:
            raise SourceError(where, f"{job!r} has no seed, but the task ran seeds {seeds} ({source})")
        return None
    try:
        seed = int(text)
    except ValueError:
        raise SourceError(where, f"{job!r}: seed {text!r} is not a whole number") from None
    if not source:
        return seed
    if not seeds:
        raise SourceError(where, f"{job!r} has seed {seed}, but the task ran without seeds ({source})")
    if seed not in seeds:
        raise SourceError(where, f"{job!r} has seed {seed}, not one of the task's seeds {seeds} ({source})")
    return seed


def _lm_eval_results(samples: Path, stamp: str) -> dict[str, Any]:
    """The ``results_<stamp>.json`` written with a samples file ({} when it is not there)."""
    path = samples.with_name(f"results_{stamp}.json")
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # ValueError: also 4,301+ digits
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(";")[0]
        raise SourceError(Location(path.name), f"not JSON: {why}") from None
    return {**data, "_file": path.name} if isinstance(data, dict) else {}


def _lm_eval_model(results: dict[str, Any], samples: Path) -> str:
    """The model an lm-eval run used: ``pretrained=`` of its model_args, else its folder name."""
    args = _model_args(_object(results.get("config"), str(results.get("_file")), "config").get("model_args"))
    return str(args.get("pretrained") or results.get("model_name") or samples.parent.name.replace("__", "/"))


def _model_args(value: Any) -> dict[str, Any]:
    """lm-eval's ``model_args`` (``"a=1,b=2"`` or a dict) as a dict."""
    if isinstance(value, dict):
        return dict(value)
    if not isinstance(value, str) or not value.strip():
        return {}
    out = {}
    for part in value.split(","):
        key, _, val = part.partition("=")
        if key.strip():
            out[key.strip()] = val.strip()
    return out


def _lm_eval_sampling(kwargs: dict[str, Any]) -> dict[str, Any]:
    """lm-eval ``generation_kwargs`` in culturebench's sampling names."""
    greedy = kwargs.get("do_sample") is False
    out = {
        "max_new_tokens": kwargs.get("max_gen_toks"),
        "temperature": 0.0 if greedy else kwargs.get("temperature"),
    }
    return {k: v for k, v in out.items() if v is not None}


def _task_of(path: Path, dataset: Any, task: Any, harness_task: str) -> tuple[str, str]:
    """``(dataset, task)`` of a log: what culturebench recorded in it, else its task name. A
    recorded task that is not the one the harness ran is an error (a log edited or mixed)."""
    try:
        named = parse_harness_name(harness_task)
    except CultureBenchError:
        named = None
    if isinstance(dataset, str) and isinstance(task, str):
        from culturebench.eval.tasks import canonical_name

        if named is not None and named != (dataset, canonical_name(dataset, task)):
            raise SourceError(
                Location(path.name, None, "task"),
                f"the harness ran {harness_task!r} ({named[0]}/{named[1]}), but the log's culturebench "
                f"metadata names {dataset}/{task}",
            )
        return dataset, task
    if named is None:
        raise SourceError(Location(path.name, None, "task"), f"{harness_task!r} is not a culturebench task")
    return named
