"""Every text and VQA task of every dataset as an Inspect task (inspect_ai 0.3.285).

``inspect eval culturebench/borsch_origin_qa --model hf/PATH -T local=RELEASE`` runs the same
requests as ``culturebench eval run borsch origin-qa --local RELEASE``: the rows come from the
pinned release through culturebench's loader (``-T local=`` a release folder, or ``-T
revision=`` a Hub revision pinned to its commit, ``-T repo=`` another Hub repo), the prompts from
the dataset's ``prompts.yaml``, images as data URLs before the text (as every culturebench
backend sends them). Each answer is scored by the task's own ``score`` (the sample ``eval run``
writes is the score's metadata; its numbers are the score's value), and the task's metric is the
task's own ``aggregate`` over every (sample, epoch). The paper's decoding is the task's
``GenerateConfig`` (``max_tokens``, ``temperature``); the paper's seeds are Inspect epochs.

Registered through ``[project.entry-points.inspect_ai] culturebench =
"culturebench.eval.harness.inspect_registry"``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from culturebench.errors import CultureBenchError, UsageError
from culturebench.eval.harness.common import (
    PACKAGE,
    harness_name,
    harness_requests,
    sample_record,
    score_values,
    scored,
    top_level,
)

# Sample metadata key holding what culturebench needs to score an answer.
META = "culturebench"


def make_task(dataset: str, task_name: str) -> Callable[..., Any]:
    """An Inspect ``@task`` function for ``dataset``/``task_name``, registered as
    ``culturebench/<dataset>_<task>``; its arguments (``-T key=value``) say which release."""
    from inspect_ai import task

    def culturebench_task(
        local: str | None = None,
        revision: str | None = None,
        repo: str | None = None,
        lang: str | None = None,
        epochs: int | None = None,
    ) -> Any:
        """The culturebench task, pinned to a release folder (``local``) or a Hub revision
        (``revision``, ``repo``); ``lang``: one of the task's languages (default all);
        ``epochs``: how many times each request is answered (default: the paper's seeds)."""
        options = {"local": local, "revision": revision, "repo": repo, "lang": lang, "epochs": epochs}
        try:
            return build_task(
                dataset, task_name, local=local, revision=revision, repo=repo, lang=lang, epochs=epochs
            )
        except CultureBenchError as exc:  # shown by Inspect as one line, not a traceback
            raise task_argument_error(dataset, task_name, options, exc) from None

    name = harness_name(dataset, task_name)
    culturebench_task.__name__ = culturebench_task.__qualname__ = name
    return task(name=_registry_name(culturebench_task, name))(culturebench_task)


class TaskArgumentError(UsageError):
    """A ``-T`` argument of a culturebench Inspect task is wrong (names the option)."""

    def __init__(self, option: str | None, message: str) -> None:
        self.option = option
        super().__init__(message)


def task_argument_error(
    dataset: str, task_name: str, options: dict[str, Any], exc: CultureBenchError
) -> Exception:
    """``exc`` as the error Inspect shows as one line without a traceback (its
    ``PrerequisiteError``), naming the task and the ``-T`` option at fault."""
    option = exc.option if isinstance(exc, TaskArgumentError) else _option_of(options, exc)
    given = f" -T {option}={options[option]}" if option and options.get(option) is not None else ""
    message = f"culturebench/{harness_name(dataset, task_name)}{given}: {' '.join(str(exc).split())}"
    try:
        from inspect_ai._util.error import PrerequisiteError
        from rich.markup import escape
    except ImportError:  # moved in another inspect_ai: still one line of ours
        return UsageError(message)
    error = PrerequisiteError(escape(message))  # Inspect prints it with rich: brackets kept as text
    error.args = (message,)  # str(error): the line itself (Inspect's Python API)
    return error


def _option_of(options: dict[str, Any], exc: CultureBenchError) -> str | None:
    """Which ``-T`` option a release or language error is about."""
    text = str(exc)
    if "has no prompts in" in text:
        return "lang"
    for key in ("local", "revision", "repo"):
        if options.get(key) is not None:
            return key
    return None


def check_task_arguments(local: Any, revision: Any, repo: Any, lang: Any, epochs: Any) -> None:
    """The ``-T`` values of a culturebench task (Inspect reads each as YAML, so ``epochs=x``
    arrives as text): a release given one way, text where text is expected, epochs a whole
    number from 1; else :class:`TaskArgumentError` naming the option."""
    for key, value in (("local", local), ("revision", revision), ("repo", repo), ("lang", lang)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise TaskArgumentError(key, "expected a non-empty text")
    if local is not None and (revision is not None or repo is not None):
        other = "revision" if revision is not None else "repo"
        raise TaskArgumentError(
            "local", f"-T local and -T {other} both name a release; give a release folder or a Hub revision"
        )
    if epochs is not None and (not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 1):
        raise TaskArgumentError("epochs", "expected a whole number from 1")


def _registry_name(function: Callable[..., Any], name: str) -> str:
    """The name to register so that Inspect lists ``culturebench/<name>``: Inspect prefixes
    the package itself when it sees culturebench as installed; run from a source checkout (an
    ``*.egg-info`` folder on ``sys.path`` hides the editable install) it does not, and the
    prefix is given here."""
    try:
        from inspect_ai._util.package import get_installed_package_name
    except ImportError:  # moved in another inspect_ai: trust its prefixing
        return name
    return name if get_installed_package_name(function) == PACKAGE else f"{PACKAGE}/{name}"


def build_task(
    dataset: str,
    task_name: str,
    *,
    local: str | None = None,
    revision: str | None = None,
    repo: str | None = None,
    lang: str | None = None,
    epochs: int | None = None,
) -> Any:
    """The Inspect :class:`~inspect_ai.Task` itself (see :func:`make_task`)."""
    from inspect_ai import Epochs, Task
    from inspect_ai.dataset import MemoryDataset
    from inspect_ai.model import GenerateConfig
    from inspect_ai.solver import generate

    check_task_arguments(local, revision, repo, lang, epochs)
    loaded = harness_requests(
        dataset, task_name, local=local, revision=revision, repo=repo, langs=[lang] if lang else None
    )
    settings = loaded.settings
    seeds = list(settings.seeds or [])
    count = epochs if epochs is not None else max(1, len(seeds))
    samples = [_sample(item) for item in loaded.requests]
    config = GenerateConfig(max_tokens=settings.max_new_tokens, temperature=settings.temperature)
    return Task(
        dataset=MemoryDataset(samples, name=f"{PACKAGE}/{dataset}"),
        solver=generate(),
        scorer=task_scorer(loaded.task),
        config=config,
        epochs=Epochs(count, "mean"),
        name=harness_name(dataset, task_name),
        version=1,
        metadata={
            META: {
                "dataset": dataset,
                "task": loaded.task.name,
                "languages": loaded.langs,
                "pin": loaded.pin,
                "seeds": seeds[:count] if epochs is None or epochs == len(seeds) else None,
                "paper_settings": settings.describe(),
                "settings_source": settings.source,
                "skipped_rows": loaded.skipped,
            }
        },
    )


def _sample(item: Any) -> Any:
    """One Inspect sample: the request's prompt (images first, as data URLs), its id, and
    the request's ``meta`` for scoring."""
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessageUser, ContentImage, ContentText

    from culturebench.eval.backends.base import image_data_url

    record = sample_record(item, None)
    if item.request.images:
        content = [ContentImage(image=image_data_url(data)) for data in item.request.images]
        prompt: Any = [ChatMessageUser(content=[*content, ContentText(text=item.request.prompt)])]
    else:
        prompt = item.request.prompt
    return Sample(id=record["id"], input=prompt, metadata={META: record["meta"]})


def task_scorer(task: Any) -> Any:
    """The task's own scoring as an Inspect scorer: value = the per-sample numbers,
    metadata = the whole sample ``eval run`` writes; metric = the task's ``aggregate``."""
    from inspect_ai.scorer import Score, scorer

    @scorer(metrics=[paper_metrics(task)], name=harness_name(task.dataset, task.name))
    def culturebench_scorer() -> Any:
        async def score(state: Any, target: Any) -> Any:
            import json

            from culturebench.eval.backends.base import Request
            from culturebench.eval.tasks import TaskRequest

            meta = json.loads(state.metadata[META])
            images = tuple(b"" for _ in range(_image_count(state)))
            item = TaskRequest(Request(str(state.sample_id), _prompt_text(state), images), meta)
            sample = scored(task, item, state.output.completion, None)
            return Score(
                value=score_values(sample, meta),
                answer=state.output.completion,
                metadata={"sample": sample},
            )

        return score

    return culturebench_scorer()


def paper_metrics(task: Any) -> Any:
    """The task's ``aggregate`` over every (sample, epoch) score: its top-level headline
    numbers (e.g. ``accuracy``), the same as ``eval run`` reports."""
    from inspect_ai.scorer import metric

    @metric(name=f"{harness_name(task.dataset, task.name)}_metrics", scores="unreduced")
    def culturebench_metrics() -> Any:
        def compute(scores: list[Any]) -> dict[str, float]:
            samples = [s.score.metadata["sample"] for s in scores if s.score.metadata]
            return top_level(task.aggregate(samples))

        return compute

    return culturebench_metrics()


def _image_count(state: Any) -> int:
    from inspect_ai.model import ContentImage

    first = state.input if isinstance(state.input, list) else []
    content = first[0].content if first and isinstance(first[0].content, list) else []
    return sum(isinstance(part, ContentImage) for part in content)


def _prompt_text(state: Any) -> str:
    return state.input if isinstance(state.input, str) else state.input_text
