"""What a dataset card tells its reader to type: the Hub repo the release is published to (for
``load_dataset``), the paper as a reference (not a file on the builder's machine), and the
commands that evaluate a model on the release through culturebench, Inspect and
lm-evaluation-harness."""

from __future__ import annotations

import re
from dataclasses import dataclass

from culturebench.spec import DatasetSpec

DEFAULT_ORG = "culturebench"  # `culturebench release --repo` default, and every loader's
BIBTEX_FIELD = re.compile(r"^\s*(\w+)\s*=\s*[{\"](.*)[}\"]\s*,?\s*$")
TEX = {r"{\o}": "ø", r"{\O}": "Ø", r"{\"o}": "ö", r"{\"u}": "ü", r"{\"a}": "ä", r"{\'e}": "é", "--": "–"}


def hub_repo(spec: DatasetSpec) -> str:
    """The Hub repo the release is published to: ``release: repo:`` in ``dataset.yaml``, else
    ``culturebench/<name>`` (the repo every culturebench loader reads by default)."""
    return str(spec.release_defaults.get("repo") or f"{DEFAULT_ORG}/{spec.name}")


def _bibtex_fields(citation: str) -> dict[str, str]:
    fields = {}
    for line in citation.splitlines():
        match = BIBTEX_FIELD.match(line)
        if match:
            value = match.group(2)
            for tex, char in TEX.items():
                value = value.replace(tex, char)
            fields[match.group(1).lower()] = " ".join(value.replace("{", "").replace("}", "").split())
    return fields


def _authors(field: str) -> str:
    names = [n.strip() for n in field.split(" and ") if n.strip()]
    last = [n.split(",")[0].strip() if "," in n else n.split()[-1] for n in names if n != "others"]
    if not last:
        return ""
    if "others" in names or len(last) > 2:
        return f"{last[0]} et al."
    return " and ".join(last)


def paper_reference(spec: DatasetSpec) -> str:
    """The paper as people cite it: authors, year, title, venue, DOI and arXiv id, read from the
    ``citation:`` BibTeX of ``dataset.yaml`` (``paper_title`` alone when there is none)."""
    fields = _bibtex_fields(str(spec.raw.get("citation", "")))
    title = fields.get("title") or str(spec.raw.get("paper_title", "")).strip()
    if not title:
        return ""
    authors = _authors(fields.get("author", ""))
    year = fields.get("year", "")
    head = f"{authors} ({year})" if authors and year else authors or year
    parts = [head, f"*{title}*"] if head else [f"*{title}*"]
    venue = fields.get("booktitle") or fields.get("journal")
    if venue:
        parts.append(venue)
    doi = fields.get("doi")
    if doi:
        parts.append(f"[doi:{doi}](https://doi.org/{doi})")
    eprint = fields.get("eprint")
    if eprint and fields.get("archiveprefix", "arxiv").lower() == "arxiv":
        parts.append(f"[arXiv:{eprint}](https://arxiv.org/abs/{eprint})")
    out = ""
    for part in parts:  # a full stop after each part, unless it ends in one ("...World?*")
        out += part if re.search(r"[.?!]\**$", part) else part + "."
        out += " "
    return out.strip()


@dataclass(frozen=True)
class EvaluateLines:
    """The card's "How to evaluate" section of one dataset."""

    tasks: list[str]  # culturebench task names a harness can run
    vision: list[str]  # those of them with images
    commands: list[str]  # shell lines, in the order a user runs them


def evaluate_lines(spec: DatasetSpec) -> EvaluateLines:
    """``culturebench eval run``, ``eval reproduce``, Inspect and lm-eval lines for the release
    (Hub repo and tag of this version; ``MODEL`` is the user's model)."""
    from culturebench.eval.harness.common import PACKAGE, harness_name, harness_tasks

    name, tag, repo = spec.name, f"v{spec.version}", hub_repo(spec)
    tasks = harness_tasks(name)
    if not tasks:
        return EvaluateLines([], [], [])
    text = [cls for cls in tasks if not cls.needs_images]
    first = (text or tasks)[0].name
    pin = f"--revision {tag}" if repo == f"{DEFAULT_ORG}/{name}" else f"--repo {repo} --revision {tag}"
    t_pin = f"-T revision={tag}" + ("" if repo == f"{DEFAULT_ORG}/{name}" else f" -T repo={repo}")
    commands = [
        "# culturebench: one task, then the paper's whole grid and its report",
        f"culturebench eval run {name} --task {first} --model MODEL {pin} --out out/runs/{name}-{first}",
        f"culturebench eval reproduce {name} --model MODEL {pin} --out out/reproduce/{name}",
        "# Inspect (pip install 'culturebench[interop]'), then its log scored by culturebench",
        f"inspect eval {PACKAGE}/{harness_name(name, first)} {t_pin} --model hf/MODEL "
        "--log-dir out/logs/inspect",
        f"culturebench eval score {name} --generations out/logs/inspect/<time>_{name}-{first}_<id>.eval "
        f"{pin} --out out/runs/inspect-{name}-{first}",
    ]
    if text:
        lm_task = f"{PACKAGE}_{harness_name(name, text[0].name)}"
        commands += [
            "# lm-evaluation-harness (text tasks)",
            f"culturebench export lm-eval {name} {pin} --out out/lm_eval_tasks/{name}",
            f"lm_eval --model hf --model_args pretrained=MODEL --include_path out/lm_eval_tasks/{name} "
            f"--tasks {lm_task} --log_samples --output_path out/lm_eval",
        ]
    return EvaluateLines(
        [cls.name for cls in tasks], [cls.name for cls in tasks if cls.needs_images], commands
    )
