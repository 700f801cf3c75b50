"""Reading CHANGELOG.md: a version's section and its declared change kind (``Kind:``)."""

from __future__ import annotations

import re

_KIND_LINE = re.compile(r"^\s*Kind:\s*(major|minor|patch)\b", re.IGNORECASE | re.MULTILINE)


def changelog_section(text: str, version: str) -> str | None:
    """Extract the body of the ``## <version>`` section of a Keep-a-Changelog style file."""
    pattern = re.compile(rf"^## \[?{re.escape(version)}\]?(?:\s.*)?$", re.MULTILINE)
    match = pattern.search(text)
    if not match:
        return None
    rest = text[match.end() :]
    nxt = re.search(r"^## ", rest, re.MULTILINE)
    return rest[: nxt.start() if nxt else len(rest)].strip()


def declared_kind(changelog_entry: str) -> str | None:
    """The ``Kind: <major|minor|patch>`` line of a CHANGELOG entry, lower-cased."""
    match = _KIND_LINE.search(changelog_entry)
    return match.group(1).lower() if match else None
