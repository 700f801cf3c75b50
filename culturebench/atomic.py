"""Atomic file and folder writes: build into a temp location, then rename into place.

Nothing half-written is ever visible at the destination path: either the old content is
there, or the complete new content is.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from culturebench.errors import CultureBenchError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` newlines) to ``path`` through a temp file + rename;
    text holding a credential is refused and nothing is written (:mod:`culturebench.secrets`)."""
    from culturebench.secrets import refuse_credentials

    refuse_credentials(path, text)
    write_bytes_atomic(path, text.encode("utf-8"))


class WriteFailed(CultureBenchError):
    """Writing an output failed (disk full, file too large, no permission): names the path."""


# errno values that mean "the disk will not take it": disk full, file too large, quota, read-only
NO_ROOM = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS})


def write_failed(path: str | Path, exc: OSError, *, kept: str = "") -> WriteFailed:
    """A :class:`WriteFailed` naming ``path`` and the system's reason (e.g. ``No space left on
    device``); ``kept`` says what was left unchanged."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return WriteFailed(f"cannot write {path}: {reason}" + (f"; {kept}" if kept else ""))


@contextlib.contextmanager
def no_room_named(path: str | Path, *, kept: str) -> Iterator[None]:
    """Inside the block, a write that fails for want of room (:data:`NO_ROOM`: disk full, file
    too large, quota, read-only) becomes a :class:`WriteFailed` naming the output ``path``
    and what was ``kept``; any other error passes through unchanged."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in NO_ROOM:
            raise
        raise write_failed(path, exc, kept=kept) from None


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder + ``os.replace``; a
    failure (disk full) is a :class:`WriteFailed` naming ``path``, and ``path`` is unchanged."""
    path = Path(path)
    try:
        _write_bytes_atomic(path, data)
    except OSError as exc:
        raise write_failed(path, exc, kept="its previous content is unchanged") from None


def _write_bytes_atomic(path: Path, data: bytes) -> None:
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


STAGING_MARK = ".staging-"
_LOCK = ".lock"


@contextlib.contextmanager
def staging_dir(final: str | Path) -> Iterator[Path]:
    """Yield an empty temp folder next to ``final``; remove it if the block raises.

    The caller publishes it with :func:`publish_dir`. Staging next to the destination keeps
    the final rename on one filesystem, hence atomic. The folder holds a lock file that its
    process keeps locked; staging folders of processes that died (killed builds) are
    removed on the next call (:func:`clean_stale_staging`). A parent folder this call
    created is removed again when the block fails and leaves it empty.
    """
    final = Path(final)
    created = [p for p in [final.parent, *final.parent.parents] if not p.exists()]
    final.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_staging(final.parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}{STAGING_MARK}", dir=final.parent))
    os.chmod(tmp, 0o777 & ~_umask())
    lock = _hold_lock(_lock_path(tmp))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for folder in created:  # innermost first
            with contextlib.suppress(OSError):
                folder.rmdir()  # only if empty
        raise
    else:
        # The caller normally renamed it away; clean up if it did not.
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        lock.close()
        with contextlib.suppress(OSError):
            _lock_path(tmp).unlink()


def _lock_path(staging: Path) -> Path:
    """The lock file beside a staging folder (never inside: the folder becomes the release)."""
    return staging.with_name(staging.name + _LOCK)


def _hold_lock(path: Path):
    handle = open(path, "w")  # noqa: SIM115 - held for the staging folder's lifetime
    try:
        import fcntl

        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except ImportError:  # pragma: no cover - no flock (Windows): the folder is never cleaned as stale
        pass
    return handle


def _is_stale(folder: Path) -> bool:
    """A staging folder whose lock no live process holds (its build was killed)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover
        return False
    lock = _lock_path(folder)
    if not lock.exists():
        # A staging folder without a lock file: from before locks, or killed between
        # mkdtemp and creating the lock. Stale once it is more than an hour old.
        import time

        return time.time() - folder.stat().st_mtime > 3600
    with open(lock, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a live build holds it
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def clean_stale_staging(parent: Path) -> list[Path]:
    """Remove staging folders (and staged-aside old releases) in ``parent`` whose build
    process died; return what was removed."""
    import re

    removed = []
    for child in sorted(Path(parent).glob(".*")):
        if child.is_symlink():
            continue
        if child.is_dir() and STAGING_MARK in child.name and _is_stale(child):
            shutil.rmtree(child, ignore_errors=True)
            with contextlib.suppress(OSError):
                _lock_path(child).unlink()
            removed.append(child)
        elif child.is_file() and child.name.endswith(_LOCK) and STAGING_MARK in child.name:
            if not child.with_name(child.name[: -len(_LOCK)]).exists():
                with contextlib.suppress(OSError):
                    child.unlink()  # lock of a staging folder that is gone
        elif (
            child.is_dir()
            and (match := re.search(r"\.old-(\d+)$", child.name))
            and not _pid_alive(int(match.group(1)))
        ):
            shutil.rmtree(child, ignore_errors=True)  # old release moved aside by a killed build
            removed.append(child)
    return removed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
