"""The Hub "Benchmark" file ``eval.yaml`` at the root of every release, and its check.

Format: hub-docs ``docs/hub/eval-results.md`` at 242f4a1 (marked "work in progress"), with
``evaluation_framework: inspect-ai``: top-level ``name``, ``description``,
``evaluation_framework``, ``tasks[]``; each task is read by Inspect's own loader
(``inspect eval hf/ORG/NAME``), which accepts only built-in solvers and scorers over the
release's columns. Culturebench's prompts are built from derived fields and its scorers are
its own, so each task here is an approximation declared by hand in the dataset's
``prompts.yaml`` (``hub:``, :mod:`culturebench.cards.hub_tasks`); its ``id`` is the
culturebench task name, the ``task_id`` that model repos' ``.eval_results`` files point to.
docs/hub-results.md says what is approximated and why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from string import Formatter
from typing import Any

import yaml

from culturebench.spec import DatasetSpec
from culturebench.yamlio import load_yaml

EVAL_YAML = "eval.yaml"
FRAMEWORK = "inspect-ai"
REQUIRED_KEYS = ("name", "description", "evaluation_framework", "tasks")
# The Hub's closed list of frameworks: huggingface.js packages/tasks/src/eval.ts,
# EVALUATION_FRAMEWORKS at fe42e68 (2026-08-21); a new value needs a merged huggingface.js PR.
EVALUATION_FRAMEWORKS = (
    "exgentic",
    "inspect-ai",
    "math-arena",
    "mteb",
    "olmocr-bench",
    "harbor",
    "ifstruct",
    "pier",
    "redline-bench",
    "archipelago",
    "benchflow",
    "apex-evals",
    "screenspot-pro",
    "swe-bench",
    "swe-bench-pro",
    "nemo-evaluator",
    "yc-bench",
    "open-asr-leaderboard",
    "mdpbench",
    "real5-omnidocbench",
    "parsebench",
    "video-mme-v2",
    "claw-eval",
    "researchclawbench",
    "pbench",
    "wildclawbench",
    "wbench",
    "nanofold",
    "mmmu",
    "extractbench",
)
# Inspect's loader of eval.yaml (inspect_ai 0.3.285, inspect_ai/_eval/task/hf.py): the keys of
# its pydantic HFTask (extra keys forbidden), of HFFieldSpec, and the Literal names of HFSolver
# and HFScorer (a custom scorer cannot be named).
TASK_KEYS = (
    "id",
    "config",
    "split",
    "field_spec",
    "shuffle_choices",
    "epochs",
    "epoch_reducer",
    "solvers",
    "scorers",
)
FIELD_SPEC_KEYS = (
    "input",
    "target",
    "choices",
    "id",
    "metadata",
    "sandbox",
    "files",
    "setup",
    "checkpoint",
    "description",
    "input_image",
)
SOLVERS = (
    "prompt_template",
    "system_message",
    "user_message",
    "chain_of_thought",
    "use_tools",
    "generate",
    "self_critique",
    "multiple_choice",
)
SCORERS = (
    "includes",
    "match",
    "pattern",
    "answer",
    "exact",
    "f1",
    "model_graded_qa",
    "model_graded_fact",
    "choice",
    "math",
)
# scorers that read the target as text for a grader model (a list's Python repr is readable)
MODEL_GRADED = ("model_graded_qa", "model_graded_fact")
EPOCH_REDUCER = re.compile(r"^(pass_at_\d+|at_least_\d+|max|mode|median|mean)$")
LITERAL = "literal:"


def inspect_task_name(dataset: str, task: str) -> str:
    """The Inspect registry name of culturebench's own task (``pip install culturebench[interop]``)."""
    from culturebench.eval.harness.common import PACKAGE, harness_name

    return f"{PACKAGE}/{harness_name(dataset, task)}"


def eval_yaml(spec: DatasetSpec, version: str | None = None) -> dict[str, Any]:
    """``eval.yaml`` of a release of ``spec`` (at ``version``, default the declared one) as a dict."""
    return _eval_yaml(spec, version, _hub_tasks(spec))


def _hub_tasks(spec: DatasetSpec) -> dict[str, Any]:
    from culturebench.cards.hub_tasks import hub_tasks
    from culturebench.errors import CultureBenchError

    tasks = hub_tasks(spec.name)
    if not tasks:
        raise CultureBenchError(f"{spec.name}: no task a harness can run, so no eval.yaml task to declare")
    return tasks


def _eval_yaml(spec: DatasetSpec, version: str | None, tasks: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": spec.pretty_name,
        "description": _description(spec, version or spec.version, list(tasks)),
        "evaluation_framework": FRAMEWORK,
        "tasks": [task.entry() for task in tasks.values()],
    }


def _description(spec: DatasetSpec, version: str, names: list[str]) -> str:
    ours = ", ".join(inspect_task_name(spec.name, n) for n in names)
    return (
        f"{spec.pretty_name}, release {version}. The paper's prompts and scorers are the Inspect tasks "
        f"{ours} (pip install culturebench[interop]). The tasks below only approximate them for "
        "the Hub's own Inspect route (inspect eval hf/<this repo>): Inspect's built-in solvers and "
        "scorers over this release's columns, one prompt and language per task (the comment above "
        "each task says what differs). Leaderboard values come from culturebench's own scorers, "
        "submitted as .eval_results files in model repos (culturebench eval results)."
    )


def render_eval_yaml(spec: DatasetSpec, version: str | None = None) -> str:
    """The text of ``eval.yaml``: the dict of :func:`eval_yaml`, each task preceded by a
    comment saying how it differs from culturebench's task (its ``hub.note``)."""
    tasks = _hub_tasks(spec)
    data = _eval_yaml(spec, version, tasks)
    notes = {name: task.note for name, task in tasks.items()}
    head = {k: v for k, v in data.items() if k != "tasks"}
    lines = [
        f"# The Hub benchmark file of {spec.name} (hub-docs eval-results, evaluation_framework inspect-ai),",
        f"# written by culturebench from datasets/{spec.name}/prompts.yaml (hub:); docs/hub-results.md.",
        _dump(head).rstrip("\n"),
        "tasks:",
    ]
    for task in data["tasks"]:
        note = notes.get(task["id"]) or ""
        lines += [
            f"# {task['id']}: {line}" if i == 0 else f"#   {line}" for i, line in enumerate(_wrap(note))
        ]
        lines.append(_dump([task]).rstrip("\n"))
    return "\n".join(lines) + "\n"


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=100, default_flow_style=False)


def _wrap(text: str, width: int = 96) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=width) if text else []


# ------------------------------------------------------------------------------- the check
@dataclass(frozen=True)
class EvalYamlProblem:
    """One fault of a release's ``eval.yaml``: where (``field``, e.g.
    ``tasks[origin-qa].field_spec.target``), the config it concerns, and why."""

    field: str
    message: str
    config: str | None = None


@dataclass(frozen=True)
class _Config:
    splits: tuple[str, ...]
    features: dict[str, Any] | None  # column -> datasets feature (None: the card declares none)


def check_eval_yaml(folder: str | Path) -> list[EvalYamlProblem]:
    """Every fault of ``folder/eval.yaml`` against the release it sits in: present, parses,
    the required keys, a framework in the Hub's closed list, unique task ids, each task's
    config and split in the release, its field_spec columns in that config's features (the
    card's ``dataset_info``), solvers/scorers Inspect knows, no key Inspect's ``HFTask``
    forbids. Never raises for bad content."""
    folder = Path(folder)
    path = folder / EVAL_YAML
    if not path.is_file() or path.is_symlink():
        return [EvalYamlProblem(EVAL_YAML, "eval.yaml: the file is missing")]
    try:
        data = load_yaml(path)
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return [EvalYamlProblem(EVAL_YAML, f"eval.yaml: does not parse as YAML: {first}")]
    if not isinstance(data, dict):
        return [
            EvalYamlProblem(
                EVAL_YAML, "eval.yaml: not a mapping of name, description, evaluation_framework, tasks"
            )
        ]
    problems = [
        EvalYamlProblem(key, f"eval.yaml: no {key!r} (required)")
        for key in REQUIRED_KEYS
        if data.get(key) in (None, "", [])
    ]
    framework = data.get("evaluation_framework")
    if framework is not None and framework not in EVALUATION_FRAMEWORKS:
        problems.append(
            EvalYamlProblem(
                "evaluation_framework",
                f"eval.yaml: evaluation_framework {framework!r} is not one of the Hub's "
                f"({', '.join(EVALUATION_FRAMEWORKS)})",
            )
        )
    for key in ("name", "description"):
        if data.get(key) is not None and not isinstance(data[key], str):
            problems.append(EvalYamlProblem(key, f"eval.yaml: {key} is not text"))
    tasks = data.get("tasks")
    if tasks is None:
        return problems
    if not isinstance(tasks, list):
        return [*problems, EvalYamlProblem("tasks", "eval.yaml: tasks is not a list")]
    configs = _release_configs(folder)
    seen: set[str] = set()
    for index, task in enumerate(tasks):
        problems += _check_task(task, index, framework == FRAMEWORK, configs, seen)
    return problems


def _release_configs(folder: Path) -> dict[str, _Config]:
    """config -> its splits (manifest) and features (the card's ``dataset_info``)."""
    from culturebench.cards.card import parse_card
    from culturebench.manifest import read_manifest
    from datasets import Features

    try:
        manifest = read_manifest(folder)
    except Exception:  # the manifest check reports it
        return {}
    declared: dict[str, dict[str, Any]] = {}
    try:
        meta, _body = parse_card((folder / "README.md").read_text(encoding="utf-8"))
        for info in meta.get("dataset_info") or []:
            declared[info["config_name"]] = dict(Features._from_yaml_list(info["features"]))
    except Exception:  # the card check reports an unreadable card
        pass
    return {
        name: _Config(tuple(cfg.get("splits", {})), declared.get(name))
        for name, cfg in manifest.get("configs", {}).items()
    }


def _check_task(
    task: Any, index: int, inspect: bool, configs: dict[str, _Config], seen: set[str]
) -> list[EvalYamlProblem]:
    task_id = task.get("id") if isinstance(task, dict) else None
    label = f"tasks[{task_id if isinstance(task_id, str) and task_id else index}]"
    if not isinstance(task, dict):
        return [EvalYamlProblem(label, f"eval.yaml: {label} is not a mapping")]
    problems = []

    def bad(where: str, message: str, config: str | None = None) -> None:
        problems.append(
            EvalYamlProblem(f"{label}.{where}" if where else label, f"eval.yaml: {message}", config)
        )

    if not isinstance(task_id, str) or not task_id.strip():
        bad("id", f"{label} has no id (the task_id of model repos' .eval_results)")
    elif task_id in seen:
        bad("id", f"task id {task_id!r} is declared twice")
    else:
        seen.add(task_id)
    if inspect:
        for key in sorted(set(task) - set(TASK_KEYS)):
            bad(key, f"task {task_id!r}: unknown key {key!r} (Inspect's HFTask forbids it)")
    config = task.get("config", "default")
    split = task.get("split", "test")
    if not isinstance(config, str) or config not in configs:
        bad(
            "config",
            f"task {task_id!r}: config {config!r} is not in the release ({', '.join(configs)})",
            config,
        )
    elif split not in configs[config].splits:
        bad("split", f"task {task_id!r}: config {config!r} has no split {split!r}", config)
    if inspect:
        features = configs[config].features if isinstance(config, str) and config in configs else None
        for where, message in _check_inspect(task, features):
            bad(where, f"task {task_id!r}: {message}", config if isinstance(config, str) else None)
    return problems


def _check_inspect(task: dict[str, Any], features: dict[str, Any] | None) -> list[tuple[str, str]]:
    """(field, message) for everything Inspect's loader would refuse or misread."""
    out: list[tuple[str, str]] = []
    spec = task.get("field_spec")
    if not isinstance(spec, dict):
        return [("field_spec", "field_spec (input, target, ...) is required with inspect-ai")]
    for key in sorted(set(spec) - set(FIELD_SPEC_KEYS)):
        out.append((f"field_spec.{key}", f"field_spec has an unknown key {key!r}"))
    for key in ("input", "target"):
        if not isinstance(spec.get(key), str) or not spec[key]:
            out.append((f"field_spec.{key}", f"field_spec.{key} must name a column"))
    scorers = task.get("scorers")
    graded = isinstance(scorers, list) and any(
        isinstance(s, dict) and s.get("name") in MODEL_GRADED for s in scorers
    )
    out += _check_columns(spec, features, graded)
    out += _check_steps(task.get("solvers"), "solvers", SOLVERS)
    out += _check_steps(scorers, "scorers", SCORERS)
    out += _check_template(task.get("solvers"), spec)
    epochs = task.get("epochs", 1)
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        out.append(("epochs", f"epochs {epochs!r} is not an integer >= 1"))
    reducer = task.get("epoch_reducer")
    if reducer is not None and not (isinstance(reducer, str) and EPOCH_REDUCER.match(reducer)):
        out.append(("epoch_reducer", f"epoch_reducer {reducer!r} is not one Inspect knows"))
    if task.get("shuffle_choices") is not None and not isinstance(task["shuffle_choices"], bool):
        out.append(("shuffle_choices", "shuffle_choices is not true/false"))
    return out


def _check_columns(
    spec: dict[str, Any], features: dict[str, Any] | None, graded: bool
) -> list[tuple[str, str]]:
    """field_spec names columns of the config (a ``literal:`` target excepted); a target other
    than a scalar column is turned into its Python repr by Inspect, so only a grader model can
    read it."""
    from datasets import ClassLabel, Value

    if features is None:
        return []
    out = []
    named: list[tuple[str, Any]] = [(k, spec.get(k)) for k in ("input", "input_image", "description")]
    target = spec.get("target")
    if not (isinstance(target, str) and target.startswith(LITERAL)):
        named.append(("target", target))
    choices = spec.get("choices")
    named += [("choices", c) for c in (choices if isinstance(choices, list) else [choices])]
    metadata = spec.get("metadata")
    if metadata is not None and not isinstance(metadata, list):
        out.append(("field_spec.metadata", "field_spec.metadata is not a list of columns"))
        metadata = []
    named += [("metadata", m) for m in metadata or []]
    for key, column in named:
        if column is None and key != "target":
            continue
        if not isinstance(column, str) or column not in features:
            out.append((f"field_spec.{key}", f"field_spec.{key} {column!r} is not a column of the config"))
    scalar = isinstance(target, str) and isinstance(features.get(target), Value | ClassLabel)
    if isinstance(target, str) and target in features and not graded and not scalar:
        out.append(
            (
                "field_spec.target",
                f"field_spec.target {target!r} is not a single value (Inspect compares its Python "
                "repr); use a model-graded scorer or a scalar column",
            )
        )
    return out


def _check_steps(steps: Any, key: str, allowed: tuple[str, ...]) -> list[tuple[str, str]]:
    if not isinstance(steps, list) or not steps:
        return [(key, f"{key} must be a non-empty list of {{name, args}}")]
    out = []
    for i, step in enumerate(steps):
        where = f"{key}[{i}]"
        if not isinstance(step, dict):
            out.append((where, f"{where} is not a mapping"))
            continue
        if step.get("name") not in allowed:
            out.append(
                (
                    f"{where}.name",
                    f"{where}: {step.get('name')!r} is not an Inspect built-in ({', '.join(allowed)})",
                )
            )
        if not isinstance(step.get("args", {}), dict):
            out.append((f"{where}.args", f"{where}.args is not a mapping"))
        for extra in sorted(set(step) - {"name", "args"}):
            out.append((f"{where}.{extra}", f"{where} has an unknown key {extra!r}"))
    return out


def _check_template(solvers: Any, spec: dict[str, Any]) -> list[tuple[str, str]]:
    """A ``prompt_template`` reads ``{prompt}`` and sample metadata only: each placeholder
    must be one of those (else it stays in the prompt as written)."""
    out: list[tuple[str, str]] = []
    listed = spec.get("metadata")
    metadata: list[Any] = listed if isinstance(listed, list) else []
    for i, step in enumerate(solvers if isinstance(solvers, list) else []):
        if not isinstance(step, dict) or step.get("name") != "prompt_template":
            continue
        template = (step.get("args") or {}).get("template") if isinstance(step.get("args"), dict) else None
        if not isinstance(template, str):
            out.append((f"solvers[{i}].args.template", "prompt_template has no template text"))
            continue
        try:
            names = [name for _text, name, _spec, _conv in Formatter().parse(template) if name is not None]
        except ValueError as exc:
            out.append((f"solvers[{i}].args.template", f"prompt_template does not parse: {exc}"))
            continue
        for name in names:
            base = re.split(r"[.\[]", name, maxsplit=1)[0]
            if base != "prompt" and base not in metadata:
                out.append(
                    (
                        f"solvers[{i}].args.template",
                        f"prompt_template placeholder {{{name}}} is neither {{prompt}} nor a metadata column",
                    )
                )
    return out
