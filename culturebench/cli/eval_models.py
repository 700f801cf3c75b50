"""``culturebench eval list``, ``eval backends`` and ``eval tiny-model``: what can run, on what."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from culturebench.cli.commands import CommandSet
from culturebench.cli.output import (
    console,
    fit_table,
    plain,
    print_fitted,
)
from culturebench.errors import UsageError

commands = CommandSet()


@commands.command("list")
def eval_list_cmd(
    long: Annotated[bool, typer.Option("--long", help="Each task's description, in full.")] = False,
) -> None:
    """List evaluation tasks per dataset (with --long: their descriptions). Fits 80 columns."""
    from culturebench.eval.tasks import registry
    from culturebench.eval.tasks.base import load_prompts

    rows: list[list[str]] = []
    described = []
    for dataset, tasks in registry().items():
        prompts = load_prompts(dataset).get("tasks", {})
        for name, cls in tasks.items():  # class attributes: some tasks need options to exist
            options = ", ".join(sorted(cls.accepted_options())) or "-"
            rows.append([dataset, name, cls.config, "yes" if cls.needs_images else "no",
                         ",".join(cls.languages), options])  # fmt: skip
            text = str((prompts.get(name) or {}).get("description", ""))
            if cls.aliases:  # renamed tasks: the old names still work until they are dropped
                text += f" (formerly {', '.join(cls.aliases)})"
            described.append((f"{dataset}/{name}", text))
    columns = [("dataset", "word"), ("task", "word"), ("config", "word"), ("img", "word"), ("langs", "word"),
               ("options", "text")]  # fmt: skip
    print_fitted(*fit_table("evaluation tasks", columns, rows, drop=("img", "langs", "config")))
    if long:
        for title, text in described:
            console.print(f"[bold]{title}[/]: {text}", highlight=False)
    else:
        console.print("descriptions: culturebench eval list --long", highlight=False)


@commands.command("backends")
def eval_backends_cmd(
    backend: Annotated[str | None, typer.Argument(help="One backend (default: all).")] = None,
) -> None:
    """Each backend: what it makes, what it needs, the engine flags it takes, and its options
    (--model-arg KEY=VALUE): type, default, and whether the option changes the outputs (part
    of a run's identity) or only the speed."""
    from culturebench.eval.backends import KINDS, backend_names, backend_options, describe

    names = [backend] if backend else backend_names()
    for name in names:
        info = describe(name)
        options = backend_options(name)
        flags = ", ".join("--" + f.replace("_", "-") for f in info["flags"]) or "none"
        needs = (
            f"{', '.join(info['requires'])} (extra {info['extra']})" if info["requires"] else "nothing more"
        )
        origin = "plugin" if info["plugin"] else "built-in"
        console.print(
            f"[bold]--backend {escape(name)}[/] ({KINDS.get(info['kind'], info['kind'])}, {origin}): "
            f"{escape(info['summary'])}\n  needs {escape(needs)}; engine flags: {flags}",
            highlight=False,  # wrapped at the console's width, between words
        )
        rows = [
            [o.name, plain(o.kind), "-" if o.default is None else plain(o.default),
             "outputs" if o.identity else "speed", plain(o.help)]
            for o in options
        ]  # fmt: skip
        columns = [("option", "word"), ("type", "text"), ("default", "text"), ("changes", "word"),
                   ("help", "text")]  # fmt: skip
        print_fitted(*fit_table(None, columns, rows))


@commands.command("tiny-model")
def eval_tiny_model_cmd(
    path: Annotated[Path, typer.Argument(help="Folder to create.")],
    seed: Annotated[int, typer.Option(min=0, max=2**32 - 1, help="Weight initialisation seed.")] = 0,
    vision: Annotated[
        bool, typer.Option("--vision", help="A LLaVA-style vision-language model (image tasks).")
    ] = False,
    t2i: Annotated[
        bool, typer.Option("--t2i", help="A Stable Diffusion pipeline (text-to-image tasks, 64x64).")
    ] = False,
    clip: Annotated[bool, typer.Option("--clip", help="A CLIP model (image and text embeddings).")] = False,
    dinov2: Annotated[
        bool, typer.Option("--dinov2", help="A DINOv2 model ([CLS] image embeddings).")
    ] = False,
) -> None:
    """Build a tiny random model locally (no download) for offline smoke runs; default: a
    2-layer Llama text model."""
    from culturebench.eval import tiny

    chosen = [
        name for name, flag in (("vision", vision), ("t2i", t2i), ("clip", clip), ("dinov2", dinov2)) if flag
    ]
    if len(chosen) > 1:
        raise UsageError(f"choose one of --vision, --t2i, --clip, --dinov2 (got {', '.join(chosen)})")
    kind = chosen[0] if chosen else "text"
    build = {
        "text": tiny.build_tiny_llama,
        "vision": tiny.build_tiny_llava,
        "t2i": tiny.build_tiny_sd,
        "clip": tiny.build_tiny_clip,
        "dinov2": tiny.build_tiny_dinov2,
    }[kind]
    from culturebench.outputs import MARKER, OutputKind, check_parents, kind_of, write_marker

    check_parents(path, "tiny-model")
    mark = OutputKind(f"tiny-model-{kind}")
    if path.is_dir() and kind_of(path) == mark.name:
        recorded = json.loads((path / MARKER).read_text(encoding="utf-8")).get("seed")
        if recorded == seed:  # a rerun (the docs build /tmp/tiny in two sections)
            console.print(f"tiny {kind} model already in {path} (seed {seed}); nothing to do")
            return
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise UsageError(f"{path} exists and is not an empty folder")
    what = {
        "text": "",
        "vision": "vision-language ",
        "t2i": "text-to-image ",
        "clip": "CLIP ",
        "dinov2": "DINOv2 ",
    }
    from huggingface_hub.utils import disable_progress_bars

    disable_progress_bars()  # "Writing model shards" for a model of a few kB
    written = build(path, seed=seed)
    write_marker(Path(written), mark, seed=seed)
    console.print(f"tiny {what[kind]}model written to {written}")
