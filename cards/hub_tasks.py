"""The ``hub:`` declarations of ``datasets/<name>/prompts.yaml``: for each harness task, the
columns and built-in Inspect solvers/scorers of its ``eval.yaml`` task (an approximation: see
docs/hub-results.md) and how its leaderboard value is read from a run (``result:``).

A declaration, under the task's templates::

    hub:
      input: name_col           # the column Inspect sends as {prompt}
      target: gold_col          # a column, or "literal:TEXT"
      choices: options_col      # optional: a list column, or a list of columns
      metadata: [col, ...]      # optional: more columns kept in each Inspect sample
      prompt: {lang: xx, fields: {dish: name_col}}  # optional: the task's first template
      solver: generate          # optional: a name or {name, args}
      scorer: includes          # a name or {name, args}
      note: why it differs      # a comment above the task in eval.yaml
      result:
        metric: accuracy        # the results.json metric that is the leaderboard value
        sample_score: correct   # optional: the sample key (or keys, all true) of one sample's score
        lower_is_better: false  # optional
        range: [0, 1]           # optional: [min, max] (null: unbounded)
        reference: gold         # optional: the sample key holding the gold answer
        letters: false          # optional: integer references are option letters (A-D)
        prediction: predicted   # optional: the sample key holding the parsed answer

``prompt`` turns the task's first template in ``lang`` into an Inspect ``prompt_template``:
each template field becomes ``{column}`` (``{prompt}`` for the input column); a field may
index into a column (``countries[0][name]``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from culturebench.eval.tasks.base import Task

from culturebench.errors import CultureBenchError

HUB_KEYS = ("input", "target", "choices", "metadata", "prompt", "solver", "scorer", "note", "result")
RESULT_KEYS = ("metric", "sample_score", "lower_is_better", "range", "reference", "letters", "prediction")
COLUMN = re.compile(r"^[A-Za-z_]\w*")


@dataclass(frozen=True)
class HubResult:
    """How a run's leaderboard value and per-sample scores are read (``hub.result``)."""

    metric: str
    sample_score: tuple[str, ...]
    lower_is_better: bool = False
    min_score: float | None = 0.0
    max_score: float | None = 1.0
    reference: str | None = None
    letters: bool = False
    prediction: str | None = None


@dataclass(frozen=True)
class HubTask:
    """One harness task as the Hub sees it: its ``eval.yaml`` entry and its result rule."""

    name: str
    config: str
    split: str
    field_spec: dict[str, Any]
    solvers: list[dict[str, Any]]
    scorers: list[dict[str, Any]]
    result: HubResult
    note: str = ""
    languages: tuple[str, ...] = field(default=())

    def entry(self) -> dict[str, Any]:
        """The task as an ``eval.yaml`` ``tasks[]`` item (Inspect's ``HFTask`` keys only)."""
        return {
            "id": self.name,
            "config": self.config,
            "split": self.split,
            "field_spec": dict(self.field_spec),
            "solvers": [dict(s) for s in self.solvers],
            "scorers": [dict(s) for s in self.scorers],
        }


def hub_tasks(dataset: str) -> dict[str, HubTask]:
    """task name -> :class:`HubTask` for every harness task of ``dataset``
    (:func:`culturebench.eval.harness.common.harness_tasks`), from the ``hub:``
    declarations of its ``prompts.yaml``; a missing or malformed one is a
    :class:`CultureBenchError` naming the file and the task."""
    from culturebench.eval.harness.common import harness_tasks
    from culturebench.eval.tasks.base import load_prompts
    from culturebench.spec import load_spec

    spec = load_spec(dataset)
    where = f"{spec.folder / 'prompts.yaml'}"
    prompts = (load_prompts(dataset) or {}).get("tasks") or {}
    out = {}
    for cls in harness_tasks(dataset):
        raw = (prompts.get(cls.name) or {}).get("hub")
        if not isinstance(raw, dict):
            raise CultureBenchError(
                f"{where}: task {cls.name!r} has no `hub:` mapping (its eval.yaml columns, solver, "
                "scorer and leaderboard metric; see docs/hub-results.md)"
            )
        out[cls.name] = _parse(cls, raw, spec, f"{where}: task {cls.name!r}, hub")
    return out


def _parse(cls: type[Task], raw: dict[str, Any], spec: Any, where: str) -> HubTask:
    unknown = sorted(set(raw) - set(HUB_KEYS))
    if unknown:
        raise CultureBenchError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(HUB_KEYS)})")
    input_col = _text(raw, "input", where)
    target = _text(raw, "target", where)
    choices = raw.get("choices")
    if choices is not None and not (
        isinstance(choices, str) or (isinstance(choices, list) and all(isinstance(c, str) for c in choices))
    ):
        raise CultureBenchError(f"{where}.choices: a column name or a list of column names")
    metadata = raw.get("metadata") or []
    if not isinstance(metadata, list) or not all(isinstance(m, str) for m in metadata):
        raise CultureBenchError(f"{where}.metadata: a list of column names")
    solvers: list[dict[str, Any]] = []
    prompt_columns: list[str] = []
    if raw.get("prompt") is not None:
        if choices is not None:
            raise CultureBenchError(
                f"{where}.prompt: a multiple-choice task uses Inspect's multiple_choice template"
            )
        template, prompt_columns = _prompt_template(cls, raw["prompt"], input_col, f"{where}.prompt")
        solvers.append({"name": "prompt_template", "args": {"template": template}})
    default_solver = "multiple_choice" if choices is not None else "generate"
    solvers.append(_named(raw.get("solver", default_solver), f"{where}.solver"))
    if "scorer" not in raw:
        raise CultureBenchError(f"{where}: no `scorer`")
    features = spec.configs[cls.config].features if cls.config in spec.configs else {}
    keep = (["id"] if "id" in features else []) + prompt_columns + metadata
    field_spec: dict[str, Any] = {"input": input_col, "target": target}
    if choices is not None:
        field_spec["choices"] = choices
    if keep:
        field_spec["metadata"] = list(dict.fromkeys(keep))
    note = raw.get("note") or ""
    if not isinstance(note, str):
        raise CultureBenchError(f"{where}.note: text")
    return HubTask(
        name=cls.name,
        config=cls.config,
        split=cls.split,
        field_spec=field_spec,
        solvers=solvers,
        scorers=[_named(raw["scorer"], f"{where}.scorer")],
        result=_result(raw.get("result"), f"{where}.result"),
        note=" ".join(note.split()),
        languages=tuple(cls.languages),
    )


def _text(raw: dict[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise CultureBenchError(f"{where}: `{key}` must be a column name")
    return value


def _named(value: Any, where: str) -> dict[str, Any]:
    """``name`` or ``{name, args}`` as Inspect's ``{name: ..., args: {...}}`` (args only if any)."""
    if isinstance(value, str):
        return {"name": value}
    if isinstance(value, dict) and isinstance(value.get("name"), str) and set(value) <= {"name", "args"}:
        args = value.get("args") or {}
        if not isinstance(args, dict):
            raise CultureBenchError(f"{where}.args: a mapping")
        return {"name": value["name"], **({"args": dict(args)} if args else {})}
    raise CultureBenchError(f"{where}: a name, or a mapping with `name` and optional `args`")


def _prompt_template(cls: type[Task], raw: Any, input_col: str, where: str) -> tuple[str, list[str]]:
    """The task's first ``lang`` template as Inspect's ``prompt_template`` text, and the columns
    it reads from the sample metadata. Rendered through the task's own ``render`` (so a shared
    opening sentence is kept), with literal braces escaped for Inspect's formatter."""
    if not isinstance(raw, dict) or set(raw) - {"lang", "fields"} or not isinstance(raw.get("lang"), str):
        raise CultureBenchError(f"{where}: a mapping with `lang` and `fields` (template field -> column)")
    fields = raw.get("fields") or {}
    if not isinstance(fields, dict) or not all(
        isinstance(v, str) and COLUMN.match(v) for v in fields.values()
    ):
        raise CultureBenchError(f"{where}.fields: template field -> column (e.g. dish: name)")
    lang = raw["lang"]
    task = cls()
    try:
        template = task.templates(lang)[0]
    except (KeyError, IndexError):
        raise CultureBenchError(f"{where}.lang: the task has no {lang!r} template") from None
    marks = {name: f"\x00{i}\x00" for i, name in enumerate(fields)}
    try:
        text = task.render(template, marks, lang)
    except KeyError as exc:
        raise CultureBenchError(f"{where}.fields: the {lang!r} template also uses {exc.args[0]!r}") from None
    text = text.replace("{", "{{").replace("}", "}}")
    columns = []
    for name, mark in marks.items():
        column = fields[name]
        text = text.replace(mark, "{prompt}" if column == input_col else "{" + column + "}")
        if column != input_col:
            columns.append(COLUMN.match(column).group(0))  # type: ignore[union-attr]
    return text, columns


def _result(raw: Any, where: str) -> HubResult:
    if not isinstance(raw, dict) or not isinstance(raw.get("metric"), str):
        raise CultureBenchError(
            f"{where}: a mapping with `metric` (the results.json metric of the leaderboard)"
        )
    unknown = sorted(set(raw) - set(RESULT_KEYS))
    if unknown:
        raise CultureBenchError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(RESULT_KEYS)})")
    score = raw.get("sample_score", raw["metric"])
    keys = (score,) if isinstance(score, str) else tuple(score) if isinstance(score, list) else ()
    if not keys or not all(isinstance(k, str) for k in keys):
        raise CultureBenchError(f"{where}.sample_score: a sample key or a list of sample keys")
    bounds = raw.get("range", [0, 1])
    if not (
        isinstance(bounds, list)
        and len(bounds) == 2
        and all(b is None or (isinstance(b, int | float) and not isinstance(b, bool)) for b in bounds)
    ):
        raise CultureBenchError(f"{where}.range: [min, max], each a number or null")
    for key in ("reference", "prediction"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise CultureBenchError(f"{where}.{key}: a sample key")
    for key in ("lower_is_better", "letters"):
        if not isinstance(raw.get(key, False), bool):
            raise CultureBenchError(f"{where}.{key}: true or false")
    return HubResult(
        metric=raw["metric"],
        sample_score=keys,
        lower_is_better=raw.get("lower_is_better", False),
        min_score=None if bounds[0] is None else float(bounds[0]),
        max_score=None if bounds[1] is None else float(bounds[1]),
        reference=raw.get("reference"),
        letters=raw.get("letters", False),
        prediction=raw.get("prediction"),
    )
