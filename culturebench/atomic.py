"""Atomic file and folder writes: build into a temp location, then rename into place.

Nothing half-written is ever visible at the destination path: either the old content is
there, or the complete new content is.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` newlines) to ``path`` through a temp file + rename."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder + ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def staging_dir(final: str | Path) -> Iterator[Path]:
    """Yield an empty temp folder next to ``final``; remove it if the block raises.

    The caller publishes it with :func:`publish_dir`. Staging next to the destination keeps
    the final rename on one filesystem, hence atomic.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.staging-", dir=final.parent))
    os.chmod(tmp, 0o777 & ~_umask())
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    else:
        # The caller normally renamed it away; clean up if it did not.
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def publish_dir(staged: Path, final: str | Path, *, overwrite: bool = False) -> Path:
    """Rename a fully written ``staged`` folder to ``final``.

    Raises :class:`FileExistsError` when ``final`` exists and ``overwrite`` is false. With
    ``overwrite`` the old folder is first moved aside, then removed once the new one is in
    place, so a crash never leaves ``final`` missing *and* the old content deleted.
    """
    final = Path(final)
    if final.exists():
        if not overwrite:
            raise FileExistsError(f"{final} already exists (use --overwrite to replace it)")
        aside = final.with_name(f".{final.name}.old-{os.getpid()}")
        os.replace(final, aside)
        try:
            os.replace(staged, final)
        except BaseException:
            os.replace(aside, final)
            raise
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.replace(staged, final)
    return final
