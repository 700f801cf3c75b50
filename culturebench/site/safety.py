"""What keeps the site to what it wrote itself (docs/site.md, "The site runs nothing it did
not write"): the Content-Security-Policy of every page, the input files that are links to
outside their folder (never followed), and the machine paths that never reach a built file
(made relative to the run folder, or cut to their last part)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

# Only the site's own files: its scripts and style sheet, its thumbnails (img/), nothing inline,
# nothing fetched. (``frame-ancestors`` counts only as a header: ``culturebench site --serve``.)
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; font-src 'self'; "
    "connect-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'"
)
CSP_HEADER = CSP + "; frame-ancestors 'none'"

# An absolute path inside a text: a leading separator (or ``~``, a drive, ``file://``) and at
# least two parts, after the text's start, a space or an opening bracket or quote. Relative
# links (``../data/x``) and the paths of URLs (``https://host/a/b``) do not start that way.
_SEGMENT = r"[^\s/\\\"'<>|,;()\[\]{}]+"
_ABSOLUTE = re.compile(
    rf"(?<![^\s(\[\"'=,;])(?:file://)?(?:~|[A-Za-z]:)?[/\\](?:{_SEGMENT}[/\\])+(?:{_SEGMENT})?"
)
# a samples.jsonl line that may hold a path-valued field (the rest are copied byte for byte)
_PATH_VALUE = re.compile(r'"(?:file:|~/|/|[A-Za-z]:\\\\)')


def is_absolute_path(text: str) -> bool:
    """Whether ``text`` is, as a whole, an absolute path of this or another machine (POSIX,
    Windows, ``~/...`` or a ``file:`` URL)."""
    text = text.strip()
    if not text or "\n" in text:
        return False
    if text.startswith(("file:", "~/")):
        return True
    return PurePosixPath(text).is_absolute() or PureWindowsPath(text).is_absolute()


def _name(path: str) -> str:
    """The last part of a path (``/a/b/c`` -> ``c``), whatever its separators."""
    parts = [p for p in re.split(r"[/\\]", path.removeprefix("file://")) if p]
    return parts[-1] if parts else ""


def portable_text(text: str) -> str:
    """``text`` with every absolute path in it cut to its last part (a message such as
    ``/home/me/out/run: unfinished`` becomes ``run: unfinished``)."""
    return _ABSOLUTE.sub(lambda m: _name(m.group(0)), text)


def portable_path(text: str, folder: Path | None = None) -> str:
    """An absolute path as the site writes it: relative to ``folder`` (POSIX) when it lies
    inside it, else its last part."""
    if folder is not None:
        try:
            target = Path(text.removeprefix("file://")).expanduser().resolve()
            return target.relative_to(folder.resolve()).as_posix()
        except (ValueError, OSError, RuntimeError):
            pass
    return _name(text)


def portable(value: Any, folder: Path | None = None, *, in_text: bool = True) -> Any:
    """A JSON value with no absolute path in it: a string that is a path is made relative to
    ``folder`` (or cut to its last part, :func:`portable_path`); with ``in_text``, paths inside
    longer strings are cut to their last part too (:func:`portable_text`)."""
    if isinstance(value, str):
        if is_absolute_path(value):
            return portable_path(value.strip(), folder)
        return portable_text(value) if in_text else value
    if isinstance(value, dict):
        return {k: portable(v, folder, in_text=in_text) for k, v in value.items()}
    if isinstance(value, list):
        return [portable(v, folder, in_text=in_text) for v in value]
    return value


def copy_json(source: Path, target: Path, folder: Path) -> None:
    """Copy a JSON file of an input folder with its paths made portable (:func:`portable`)."""
    from culturebench.jsonsafe import json_text

    target.write_text(json_text(portable(read_json(source), folder), indent=2), "utf-8")


def copy_jsonl(source: Path, target: Path, folder: Path) -> None:
    """Copy a JSON-lines file line for line (line numbers kept, for the samples page's links):
    a line with a path-valued field is written again with it made portable (the text of
    prompts and answers is left as it is); every other line, a corrupt one too, byte for byte."""
    with open(source, "rb") as reader, open(target, "wb") as writer:
        for raw in reader:
            line = raw.decode("utf-8", errors="replace")
            if _PATH_VALUE.search(line):
                try:
                    sample = json.loads(line)
                except (ValueError, RecursionError):
                    sample = None
                if isinstance(sample, dict):
                    clean = portable(sample, folder, in_text=False)
                    if clean != sample:
                        ending = "\n" if raw.endswith(b"\n") else ""
                        raw = (json.dumps(clean, ensure_ascii=False) + ending).encode("utf-8")
            writer.write(raw)


def inside(folder: Path, path: Path) -> bool:
    """Whether ``path``, its links followed, lies in ``folder`` (its links followed too)."""
    try:
        path.resolve().relative_to(folder.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def link_out(folder: Path, names: Iterable[str] | None = None) -> str | None:
    """The first file or folder of ``folder`` (``names`` in it, else everything below it) that
    is a link to outside ``folder``, as a path relative to it; None when there is none."""
    if names is not None:
        candidates: Iterable[Path] = (folder / name for name in names)
    else:
        candidates = (
            Path(root) / entry
            for root, dirs, files in sorted(os.walk(folder))  # links to folders are listed, not entered
            for entry in sorted((*dirs, *files))
        )
    for path in candidates:
        if path.is_symlink() and not inside(folder, path):
            return path.relative_to(folder).as_posix()
    return None


def read_json(path: Path) -> Any:
    """A JSON file an input folder holds; a corrupt one is a one-line error naming it."""
    from culturebench.errors import CultureBenchError

    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise CultureBenchError(f"{path}: cannot be read as JSON ({exc})") from None
