"""culturebench's tasks in the harnesses researchers already run: Inspect tasks (an
``inspect_ai`` entry point), lm-evaluation-harness task folders (``culturebench export
lm-eval``), and the readers that turn their logs back into generations for ``eval score``.

Every route builds the same requests from the same pinned release as ``eval run`` and scores
each answer with the task's own :meth:`~culturebench.eval.tasks.Task.score`; the harness only
generates. Nothing here imports ``inspect_ai`` or ``lm_eval`` at import time: they are the
optional ``interop`` extra."""
