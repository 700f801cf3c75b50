"""Publish a built site as a static Hugging Face Space: the Space is created when missing
(``sdk: static``), then every file of the site and the Space card go up in one commit. The
endpoint is ``HF_ENDPOINT`` (else the Hub), the token huggingface_hub's (``HF_TOKEN`` or a
saved login)."""

from __future__ import annotations

import os
from pathlib import Path

from culturebench.errors import CultureBenchError, UsageError

CARD = """---
title: culturebench results
emoji: 🍲
colorFrom: indigo
colorTo: yellow
sdk: static
app_file: index.html
pinned: false
tags:
- culturebench
- evaluation
---

# culturebench results

A static site built by `culturebench site` from run folders, `eval paper` outputs and release
folders: a leaderboard with the papers' printed rows beside measured ones, every run's metrics
by language and country, every sample, comparisons of runs, and release reviews. It needs no
server and loads nothing from elsewhere; open `index.html`.
"""


def publish_space(site: str | Path, repo_id: str, *, private: bool = False) -> str:
    """Create (when missing) the static Space ``repo_id`` and upload ``site`` to it in one
    commit; return the commit's URL."""
    from huggingface_hub import CommitOperationAdd, HfApi, constants, get_token

    folder = Path(site)
    if not (folder / "index.html").is_file():
        raise UsageError(f"{folder}: not a built site (no index.html)")
    if repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise UsageError(f"--to-space {repo_id!r}: give ORG/NAME")
    if constants.is_offline_mode():
        raise CultureBenchError(
            "HF_HUB_OFFLINE is set: cannot publish a Space (unset it, or leave out --to-space)"
        )
    token = get_token()
    if not token:
        raise CultureBenchError(
            "no Hugging Face token: set HF_TOKEN (or run `hf auth login`) to publish a Space"
        )
    base = (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
    api = HfApi(endpoint=base, token=token)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".culturebench"))
    operations = [CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=CARD.encode("utf-8"))]
    operations += [
        CommitOperationAdd(path_in_repo=p.relative_to(folder).as_posix(), path_or_fileobj=str(p))
        for p in files
    ]
    try:
        api.create_repo(repo_id, repo_type="space", space_sdk="static", private=private, exist_ok=True)
        info = api.create_commit(
            repo_id=repo_id,
            repo_type="space",
            operations=operations,
            commit_message=f"culturebench site ({len(files)} files)",
        )
    except Exception as exc:  # huggingface_hub's HTTP errors: one line, token redacted
        from culturebench.safe_http import redact

        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise CultureBenchError(f"cannot publish the Space {repo_id} at {base}: {redact(first)}") from None
    return str(info.commit_url)
