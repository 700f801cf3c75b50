"""A finished run as an Every Eval Ever 0.3.0 record: the aggregate ``{uuid}.json`` and the
instance-level ``{uuid}_samples.jsonl``, in the datastore layout
``data/<benchmark>/<developer>/<model>/``, each validated against the vendored JSON Schemas
(``eval/data/every_eval_ever/``, draft-07) before it is written.

The uuid is derived from the run (its identity and the sha256 of its samples), so exporting
the same run again writes the same files; it has the form of a version-4 uuid because the
schema's ``file_path`` pattern asks for one.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.eval.hub_runs import RunResult, culturebench_version, model_label
from culturebench.eval.run_folder import read_run_samples

EEE_VERSION = "0.3.0"
SCHEMAS = Path(__file__).parent / "data" / "every_eval_ever"
AGGREGATE_SCHEMA = "eval.schema.json"
INSTANCE_SCHEMA = "instance_level_eval.schema.json"
RELATIONSHIPS = ("first_party", "third_party", "collaborative", "other")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class Record:
    """One run as Every Eval Ever: where it goes (``data/<benchmark>/<developer>/<model>``),
    its uuid, the aggregate object and the instance-level lines."""

    folder: str
    uuid: str
    aggregate: dict[str, Any]
    samples: list[dict[str, Any]]


def require_jsonschema() -> None:
    """``jsonschema`` is importable, else one line naming the extra to install."""
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        raise CultureBenchError(
            "`eval results` validates its Every Eval Ever files with jsonschema: "
            "pip install 'culturebench[interop]'"
        ) from None


@cache
def _schema(name: str) -> dict[str, Any]:
    """A vendored schema, read once (both validators are built from it)."""
    return json.loads((SCHEMAS / name).read_text(encoding="utf-8"))


@cache
def _validator(name: str) -> Any:
    from jsonschema import Draft7Validator

    return Draft7Validator(_schema(name))


@cache
def _compiled(name: str) -> Any:
    """The schema compiled to Python by fastjsonschema (20x jsonschema's validator on these
    records: 3,825 sample lines in 0.07 s instead of 1.4 s), or None where it is missing. Like
    the jsonschema validator it ignores ``format`` and, with ``use_default=False``, never
    writes a default into the record it checks."""
    try:
        import fastjsonschema
    except ImportError:  # pragma: no cover - part of the interop extra
        return None
    return fastjsonschema.compile(_schema(name), use_default=False, use_formats=False)


def schema_errors(data: Any, schema: str) -> list[str]:
    """Every violation of ``schema`` (:data:`AGGREGATE_SCHEMA` or :data:`INSTANCE_SCHEMA`) by
    ``data``, as ``path: message``; empty when it validates. A record the compiled schema
    accepts is taken as valid; any other is judged, and its faults named, by jsonschema (the
    reference validator). The tests check the two agree on real records and broken copies."""
    check = _compiled(schema)
    if check is not None:
        from fastjsonschema import JsonSchemaException

        try:
            check(data)
            return []
        except JsonSchemaException:
            pass
    out = []
    for error in sorted(_validator(schema).iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        where = "/".join(map(str, error.absolute_path)) or "(top)"
        out.append(f"{where}: {error.message}")
    return out


def default_model_id(result: RunResult) -> str:
    """``developer/model``: the run's model when it is a Hub id, else ``local/<folder name>``."""
    model = str((result.provenance.get("model") or {}).get("model") or "unknown")
    if re.fullmatch(r"[\w.-]+/[\w.-]+", model) and not Path(model).exists():
        return model
    return f"local/{_safe(Path(model.split(',')[0]).name) or 'model'}"


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "x"


def record_uuid(result: RunResult) -> str:
    """A uuid fixed by the run: its identity (``run.json`` without versions) and its samples."""
    from culturebench.eval.run_folder import identity

    text = json.dumps({"run": identity(result.run), "samples": result.samples_sha256}, sort_keys=True)
    return str(uuid.UUID(bytes=hashlib.sha256(text.encode()).digest()[:16], version=4))


def build(
    result: RunResult,
    *,
    dataset_id: str,
    revision: str | None,
    model_id: str,
    organization: str = "unknown",
    relationship: str = "third_party",
    samples: Sequence[Mapping[str, Any]] | None = None,
) -> Record:
    """The run's Every Eval Ever record (``dataset_id``/``revision``: the Hub dataset of the
    ``.eval_results`` entry; ``samples``: the run's samples when already read, see
    :func:`~culturebench.eval.run_folder.read_run_samples`)."""
    if "/" not in model_id:
        raise CultureBenchError(f"--model-id {model_id!r}: expected DEVELOPER/MODEL")
    if relationship not in RELATIONSHIPS:
        raise CultureBenchError(f"evaluator relationship {relationship!r}: one of {', '.join(RELATIONSHIPS)}")
    developer, model = model_id.split("/", 1)
    benchmark = _safe(dataset_id.rsplit("/", 1)[-1])
    folder = f"data/{benchmark}/{_safe(developer)}/{_safe(model)}"
    rid = record_uuid(result)
    timestamp = str(int(result.finished.timestamp()))
    evaluation_id = f"{benchmark}/{model_id}/{timestamp}"
    if samples is None:
        samples = read_run_samples(result.folder)
    lines, unscored = _instances(result, samples, evaluation_id, model_id)
    aggregate = {
        "schema_version": EEE_VERSION,
        "evaluation_id": evaluation_id,
        "evaluation_timestamp": result.finished.isoformat(),
        "retrieved_timestamp": timestamp,
        "source_metadata": {
            "source_name": "culturebench",
            "source_type": "evaluation_run",
            "source_organization_name": organization,
            "evaluator_relationship": relationship,
        },
        "eval_library": _library(result),
        "model_info": _model_info(result, model_id),
        "evaluation_results": [
            _evaluation_result(result, dataset_id, revision, samples, unscored, evaluation_result_id(result))
        ],
    }
    text = _jsonl(lines)
    aggregate["detailed_evaluation_results"] = {
        "format": "jsonl",
        "file_path": f"{folder}/{rid}_samples.jsonl",
        "hash_algorithm": "sha256",
        "checksum": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "total_rows": len(lines),
    }
    return Record(folder, rid, aggregate, lines)


def evaluation_result_id(result: RunResult) -> str:
    """The id joining the instance lines to the aggregate result: ``<task>/<metric>``."""
    return f"{result.task}/{result.hub.result.metric}"


def _library(result: RunResult) -> dict[str, Any]:
    prov = result.provenance
    out: dict[str, Any] = {"name": "culturebench", "version": culturebench_version(prov)}
    if prov.get("culturebench_git"):
        out["additional_details"] = {"git": str(prov["culturebench_git"])}
    return out


def _model_info(result: RunResult, model_id: str) -> dict[str, Any]:
    model = result.provenance.get("model") or {}
    from culturebench.eval.backends import is_self_deployed

    backend = str(model.get("backend") or "unknown")
    self_deployed = is_self_deployed(backend)  # the backend's declaration
    details = {
        "deployment_type": "self_deployed" if self_deployed else "unknown",
        "model_availability": "open_weights" if self_deployed else "unknown",
        "culturebench_model": model_label(model),
    }
    for key in ("model_revision", "weights_sha256"):
        if model.get(key):
            details[key] = str(model[key])
    engine = {"name": backend}
    version = (model.get("versions") or {}).get(backend)
    if version:
        engine["version"] = str(version)
    return {
        "name": model_id.split("/", 1)[1],
        "id": model_id,
        "developer": model_id.split("/", 1)[0],
        "inference_engine": engine,
        "additional_details": details,
    }


def _evaluation_result(
    result: RunResult,
    dataset_id: str,
    revision: str | None,
    samples: Sequence[Mapping[str, Any]],
    unscored: int,
    result_id: str,
) -> dict[str, Any]:
    from culturebench.cards.eval_yaml import inspect_task_name
    from culturebench.eval.tasks import task_class

    rule, value = result.hub.result, result.value
    prov = result.provenance
    rows = len({s.get("row_id", s["id"]) for s in samples})
    config = {"config": str(prov.get("config")), "split": str(prov.get("split"))}
    if result.ref.get("source") == "hub":
        source: dict[str, Any] = {
            "dataset_name": dataset_id,
            "source_type": "hf_dataset",
            "hf_repo": dataset_id,
            "hf_split": str(prov.get("split")),
            "samples_number": rows,
            "additional_details": {**config, "revision": str(revision)},
        }
    else:
        source = {
            "dataset_name": dataset_id,
            "source_type": "other",
            "additional_details": {
                **config,
                "release_version": str(result.ref.get("version")),
                "manifest_sha256": str(result.ref.get("manifest_sha256")),
            },
        }
    score: dict[str, Any] = {"score": value.value}
    if len(value.groups) > 1:
        score["details"] = {group: f"{v} (n={n})" for group, (v, n) in value.groups.items()}
    uncertainty: dict[str, Any] = {}
    if value.ci95 is not None:
        uncertainty["confidence_interval"] = {
            "lower": value.ci95[0],
            "upper": value.ci95[1],
            "confidence_level": 0.95,
        }
    if value.sem is not None:
        uncertainty["standard_error"] = {"value": value.sem}
    if value.n is not None:
        uncertainty["num_samples"] = int(value.n)
    if uncertainty:
        score["uncertainty"] = uncertainty
    details = {
        "culturebench_task": f"{prov['dataset']['dataset']}/{result.task}",
        "inspect_task": inspect_task_name(result.dataset, result.task),
    }
    if unscored:
        details["samples_without_a_score"] = str(unscored)
    out = {
        "evaluation_result_id": result_id,
        "evaluation_name": result.task,
        "source_data": source,
        "evaluation_timestamp": result.finished.isoformat(),
        "metric_config": {
            "evaluation_description": task_class(result.dataset, result.task)().describe() or result.task,
            "metric_id": rule.metric,
            "metric_name": rule.metric,
            "lower_is_better": rule.lower_is_better,
            "score_type": "continuous",
            "min_score": rule.min_score,
            "max_score": rule.max_score,
            "additional_details": details,
        },
        "score_details": score,
    }
    generation = _generation_config(prov)
    if generation:
        out["generation_config"] = generation
    return out


def _generation_config(prov: Mapping[str, Any]) -> dict[str, Any]:
    model = prov.get("model") or {}
    sampling = model.get("sampling") or {}
    args: dict[str, Any] = {}
    for ours, theirs in (("temperature", "temperature"), ("top_p", "top_p"), ("top_k", "top_k")):
        if isinstance(sampling.get(ours), int | float) and not isinstance(sampling.get(ours), bool):
            args[theirs] = sampling[ours]
    if isinstance(sampling.get("max_new_tokens"), int) and sampling["max_new_tokens"] >= 1:
        args["max_tokens"] = sampling["max_new_tokens"]
    details = {
        f"sampling_{k}": str(v)
        for k, v in sorted(sampling.items())
        if k not in ("temperature", "top_p", "top_k")
    }
    details |= {f"model_arg_{k}": str(v) for k, v in sorted((model.get("model_args") or {}).items())}
    if prov.get("languages"):
        details["languages"] = ",".join(map(str, prov["languages"]))
    if prov.get("seeds"):
        details["seeds"] = ",".join(map(str, prov["seeds"]))
    if prov.get("task_options"):
        details["task_options"] = json.dumps(prov["task_options"], sort_keys=True)
    if prov.get("limit"):
        details["limit"] = str(prov["limit"])
        if prov.get("limit_rows"):  # how the rows were chosen: spread over the groups, or the first N
            details["limit_rows"] = str(prov["limit_rows"])
    out: dict[str, Any] = {}
    if args:
        out["generation_args"] = args
    if details:
        out["additional_details"] = details
    return out


# --------------------------------------------------------------------- instance level
def _instances(
    result: RunResult, samples: Sequence[Mapping[str, Any]], evaluation_id: str, model_id: str
) -> tuple[list[dict[str, Any]], int]:
    """One instance line per sample that has a score (and how many have none: e.g. a
    multiple-choice answer the paper leaves out of its IoU)."""
    lines, unscored = [], 0
    for sample in samples:
        score = sample_score(sample, result.hub.result.sample_score)
        if score is None:
            unscored += 1
            continue
        lines.append(_instance(result, sample, score, evaluation_id, model_id))
    return lines, unscored


def sample_score(sample: Mapping[str, Any], keys: tuple[str, ...]) -> float | None:
    """One sample's score: the value of its key (a number, a truth value, or a text's length in
    characters); with several keys, 1.0 when all are true, else 0.0. None when it has none."""
    if len(keys) > 1:
        if any(k not in sample for k in keys):
            return None
        return 1.0 if all(sample[k] for k in keys) else 0.0
    value = sample.get(keys[0])
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return float(len(value))
    return None


def _instance(
    result: RunResult, sample: Mapping[str, Any], score: float, evaluation_id: str, model_id: str
) -> dict[str, Any]:
    rule = result.hub.result
    output = sample.get("output")
    best = rule.min_score if rule.lower_is_better else rule.max_score
    metadata = {
        k: str(sample[k])
        for k in ("row_id", "lang", "prompt_index", "seed", "repeat")
        if sample.get(k) is not None
    }
    return {
        "schema_version": EEE_VERSION,
        "evaluation_id": evaluation_id,
        "model_id": model_id,
        "evaluation_name": result.task,
        "evaluation_result_id": evaluation_result_id(result),
        "sample_id": str(sample["id"]),
        "interaction_type": "single_turn",
        "input": {
            "raw": str(sample.get("prompt", "")),
            "reference": _strings(sample.get(rule.reference) if rule.reference else None, rule.letters),
        },
        "output": {"raw": [output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)]},
        "messages": None,
        "answer_attribution": [
            {
                "turn_idx": 0,
                "source": "output",
                "extracted_value": ", ".join(_strings(sample.get(rule.prediction), False))
                if rule.prediction
                else str(output if isinstance(output, str) else ""),
                "extraction_method": f"culturebench {result.dataset}/{result.task} scorer",
                "is_terminal": True,
            }
        ],
        "evaluation": {"score": score, "is_correct": best is not None and score == best},
        "metadata": metadata,
    }


def _strings(value: Any, letters: bool) -> list[str]:
    """A gold answer or a prediction as a list of strings (an integer as its option letter
    when ``letters``)."""
    if value is None:
        return []
    items = value if isinstance(value, list | tuple) else [value]
    out = []
    for item in items:
        if letters and isinstance(item, int) and not isinstance(item, bool) and 0 <= item < len(LETTERS):
            out.append(LETTERS[item])
        else:
            out.append(item if isinstance(item, str) else json.dumps(item, ensure_ascii=False))
    return out


# ----------------------------------------------------------------------------- writing
def _jsonl(lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n" for line in lines)


def paths(record: Record, root: str | Path) -> tuple[Path, Path]:
    """Where the record goes under ``root``: its aggregate and its samples file."""
    folder = Path(root) / record.folder
    return folder / f"{record.uuid}.json", folder / f"{record.uuid}_samples.jsonl"


def validate(record: Record, root: str | Path) -> None:
    """Check the record against both schemas and for credentials, writing nothing; a fault is
    a :class:`CultureBenchError` naming the file it would go to and the first fault."""
    target, lines_path = paths(record, root)
    problems = schema_errors(record.aggregate, AGGREGATE_SCHEMA)
    if problems:
        raise CultureBenchError(f"{target}: not valid Every Eval Ever {EEE_VERSION}: {problems[0]}")
    if not _finite(record.aggregate):
        raise CultureBenchError(f"{target}: holds a number that is NaN or infinite (JSON has none)")
    for number, line in enumerate(record.samples, start=1):
        if not _finite(line):
            raise CultureBenchError(
                f"{lines_path}, line {number}: sample {line.get('sample_id')!r} has a score that is NaN or "
                "infinite (JSON has none)"
            )
        problems = schema_errors(line, INSTANCE_SCHEMA)
        if problems:
            raise CultureBenchError(
                f"{lines_path}, line {number}: not valid Every Eval Ever {EEE_VERSION}: {problems[0]}"
            )
    from culturebench.secrets import refuse_credentials

    refuse_credentials(target, _aggregate_text(record), formats=True)
    refuse_credentials(lines_path, _jsonl(record.samples))


def _finite(data: Any) -> bool:
    """Whether ``data`` holds no NaN or infinity (standard JSON can hold neither)."""
    try:
        json.dumps(data, allow_nan=False)
    except ValueError:
        return False
    return True


def _aggregate_text(record: Record) -> str:
    return json.dumps(record.aggregate, ensure_ascii=False, indent=2) + "\n"


def write(record: Record, root: str | Path, *, validated: bool = False) -> tuple[Path, Path]:
    """Validate the record (:func:`validate`; ``validated``: already done), then write
    ``root/<folder>/<uuid>.json`` and ``<uuid>_samples.jsonl`` (atomically); a violation is a
    :class:`CultureBenchError` naming the file and the first fault, and nothing is written."""
    from culturebench.atomic import write_text_atomic

    if not validated:
        validate(record, root)  # checked before either file is written
    target, lines_path = paths(record, root)
    samples, aggregate = _jsonl(record.samples), _aggregate_text(record)
    write_text_atomic(lines_path, samples)
    write_text_atomic(target, aggregate)
    return target, lines_path
