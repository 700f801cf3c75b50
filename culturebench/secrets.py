"""Credentials never reach a file (issue 40).

A value that looks like a credential (the common key formats below), or that equals the value
of an environment variable a backend reads a key from, is refused where the name of a variable
is expected (``--model-arg api_key_env=...``) and refused by every text writer
(:func:`culturebench.atomic.write_text_atomic`). The actual values of the key variables are
looked for in everything written, model outputs included; key formats in the run records
(``run.json``, ``results.json``, ``reproduce.json``, ``plan.json``), Hub result files and
Every Eval Ever records, which their writers check with ``formats=True``. The refusal names
the file and what was found, never the value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from culturebench.errors import CultureBenchError, UsageError

#: Key formats: OpenAI / Anthropic (sk-...), Hugging Face (hf_...), GitHub tokens, AWS access
#: key ids, Google API keys, Slack tokens, and JSON Web Tokens (bearer tokens).
KEY_FORMATS = {
    "an API key (sk-...)": r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{20,}",
    "a Hugging Face token (hf_...)": r"\bhf_[A-Za-z0-9]{30,}",
    "a GitHub token": r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
    "an AWS access key id": r"\bAKIA[0-9A-Z]{16}\b",
    "a Google API key": r"\bAIza[0-9A-Za-z_\-]{35}",
    "a Slack token": r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",
    "a JSON Web Token": r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
}
_FORMATS = re.compile("|".join(f"(?P<k{i}>{p})" for i, p in enumerate(KEY_FORMATS.values())))
#: Environment variables the package and its backends read keys from.
KEY_VARIABLES = {"OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "ANTHROPIC_API_KEY"}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
MIN_SECRET_CHARS = 8  # shorter variable values are not looked for (they would match anywhere)


class SecretRefused(CultureBenchError):
    """A file would have held a credential: nothing was written."""


def note_key_variable(name: str) -> None:
    """Remember that a backend reads a key from ``$name``: its value is never written."""
    KEY_VARIABLES.add(name)


def key_format(text: str) -> str | None:
    """What kind of credential ``text`` contains by its format, or None."""
    match = _FORMATS.search(text)
    if not match:
        return None
    return list(KEY_FORMATS)[int(next(k for k, v in match.groupdict().items() if v)[1:])]


def key_values(names: Iterable[str] = ()) -> dict[str, str]:
    """Value -> variable name of the key variables set in the environment."""
    out = {}
    for name in {*KEY_VARIABLES, *names}:
        value = os.environ.get(name)
        if value and len(value) >= MIN_SECRET_CHARS:
            out[value] = name
    return out


def checked_variable_name(option: str, value: str) -> str:
    """``value`` as the name of an environment variable, refused (without echoing it) when it
    is not a variable name or is a key itself."""
    if key_format(value) or value in key_values() or not _ENV_NAME.fullmatch(value):
        raise UsageError(
            f"{option}: expected the NAME of the environment variable that holds the key (e.g. "
            "OPENAI_API_KEY), and this value is not one (never the key itself); it was not recorded"
        )
    note_key_variable(value)
    return value


def credential_in(text: str, *, formats: bool = False) -> str | None:
    """What credential ``text`` holds, or None: a key variable's value; with ``formats``, also
    a key format (for run records, where no key belongs: a release's upstream data may hold
    signed URLs, which are not ours to refuse)."""
    for value, name in key_values().items():
        if value in text:
            return f"the value of ${name}"
    return key_format(text) if formats else None


def refuse_credentials(path: str | Path, text: str, *, formats: bool = False) -> None:
    """Raise :class:`SecretRefused` naming ``path`` when ``text`` holds a credential (see
    :func:`credential_in`)."""
    found = credential_in(text, formats=formats)
    if found:
        raise SecretRefused(
            f"{path}: refusing to write: it would hold {found}; nothing was written (give keys "
            "through environment variables named by options such as api_key_env)"
        )
