"""One policy for every folder or file a command writes.

* **A command replaces only what it wrote itself.** Each output folder carries a marker file
  (:data:`MARKER`, a small JSON naming the kind of output and the culturebench version that
  wrote it); folders written before markers existed are recognised by their signature files
  (e.g. a paper report's ``paper_report.json``). Anything else at the path (a folder of the
  user's, another kind of output, a file) is refused with a one-line error, even with
  ``--overwrite``: an output path is never emptied, and a file is never turned into a folder.
* **Replacing our own output needs ``--overwrite``** (run folders are the exception: they
  resume, see :mod:`culturebench.eval.runner`).
* **One writer per path.** :func:`writer_lock` takes an OS file lock (``flock``) on a hidden
  lock file beside the output, so a second process writing the same path gets a one-line
  error naming the holder, and a killed process leaves no stale lock (the kernel drops the
  lock with the process).

The output itself is staged next to its final path and renamed into place
(:mod:`culturebench.atomic`), so nothing half-written is ever visible.

* **A refusal writes nothing, anywhere.** A command that writes several folders (``eval
  score`` of several tasks, ``eval merge``, ``eval paper``, ``eval results``, ``export
  lm-eval``) checks every input first and builds its whole output in one staging folder
  (:func:`staged_output`, or the same pieces: :func:`writer_lock`,
  :func:`culturebench.atomic.staging_dir`, :func:`culturebench.atomic.publish_dir`); a
  refusal at any step, however late, leaves the output path byte for byte as it was, and a
  success replaces an earlier output of the command whole (never two layouts side by side).
  Outputs that resume (run folders, reproductions) are filled in place; a first attempt that
  fails before anything worth resuming was written is removed again
  (:func:`kept_only_if_used`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from culturebench.errors import UsageError

MARKER = ".culturebench-output.json"


class OutputRefused(UsageError):
    """An output path holds something this command did not write (or another writer holds it)."""


@dataclass(frozen=True)
class OutputKind:
    """A kind of output folder: its name (written into the marker) and the files that
    identify a folder of this kind written before markers existed."""

    name: str
    signature: Sequence[str] = ()


def _marker_kind(folder: Path) -> str | None:
    path = folder / MARKER
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return data.get("kind") if isinstance(data, dict) and isinstance(data.get("kind"), str) else None


def kind_of(folder: Path, kinds: Sequence[OutputKind] = ()) -> str | None:
    """The kind of output ``folder`` holds: from its marker, else from the signature files of
    one of ``kinds``; None for a folder culturebench did not write."""
    found = _marker_kind(folder)
    if found:
        return found
    for kind in kinds:
        if kind.signature and all((folder / name).exists() for name in kind.signature):
            return kind.name
    return None


def check_output(path: str | Path, kind: OutputKind, *, overwrite: bool, flag: str = "--out") -> bool:
    """Refuse ``path`` unless it is free, an empty folder, or ``kind``'s own output and
    ``overwrite`` is set. Returns whether a folder is there to replace (an empty one counts).
    Called before any work, and again just before publishing."""
    path = Path(path)
    clean_leftovers(path)
    if path.is_symlink():
        raise OutputRefused(f"{flag} {path} is a symbolic link; give a real path (nothing was written)")
    if not path.exists():
        check_parents(path, flag)
        return False
    if not path.is_dir():
        raise OutputRefused(
            f"{flag} {path} is a file, not a folder; culturebench will not replace it (nothing was written)"
        )
    if not any(path.iterdir()):
        return True
    _refuse_foreign(path, kind, flag, "replace it, even with --overwrite")
    if not overwrite:
        raise OutputRefused(f"{flag} {path} already exists (use --overwrite to replace it)")
    return True


def _refuse_foreign(folder: Path, kind: OutputKind, flag: str, action: str) -> None:
    """Refuse a non-empty ``folder`` that is not ``kind``'s own output (``action``: what is
    refused, e.g. "replace it")."""
    found = kind_of(folder, [kind])
    if found != kind.name:
        what = f"a {found} output" if found else "files culturebench did not write"
        raise OutputRefused(
            f"{flag} {folder} holds {what}; refusing to {action} (give a new or empty folder)"
        )


def check_folder_path(out: str | Path, flag: str = "--out") -> Path:
    """The first checks of a folder output: leftovers of a killed writer cleaned, and neither a
    symbolic link nor a file at ``out`` (one line each, nothing written)."""
    out = Path(out)
    clean_leftovers(out)
    if out.is_symlink():
        raise OutputRefused(f"{flag} {out} is a symbolic link; give a real folder (nothing was written)")
    if out.exists() and not out.is_dir():
        raise OutputRefused(f"{flag} {out} is a file, not a folder (nothing was written)")
    return out


def check_parents(path: Path, flag: str) -> None:
    """Refuse ``path`` when one of its existing ancestors is a file (nothing can go below it),
    or a release or run folder (an extra file there breaks the release's validation or the
    run's provenance)."""
    checked_file = False
    for parent in Path(path).resolve().parents:
        if not parent.exists():
            continue
        if not checked_file and not parent.is_dir():
            raise OutputRefused(f"{flag} {path}: {parent} is a file, not a folder (nothing was written)")
        checked_file = True
        what = protected_folder(parent)
        if what:
            raise OutputRefused(f"{flag} {path} is inside the {what} {parent}; write it elsewhere")


# outputs replaced whole by their own command (``--overwrite``): a folder of someone else's
# inside one would be deleted with it
REPLACED_WHOLE = {"paper-report": "eval paper output", "site": "site"}


def protected_folder(folder: Path) -> str | None:
    """What culturebench folder ``folder`` is, if nothing else may be written into it: a
    release (``manifest.json`` + ``data/``), a run (``run.json``), a corpus count, or an output
    its command replaces whole (an ``eval paper`` report, a site)."""
    if (folder / "manifest.json").is_file() and (folder / "data").is_dir():
        return "release folder"
    if (folder / "run.json").is_file():
        return "run folder"
    if (folder / "count.json").is_file():
        return "corpus count folder"
    kind = _marker_kind(folder)
    return REPLACED_WHOLE.get(kind) if kind else None


def check_writable(path: str | Path, flag: str = "--out") -> None:
    """Refuse ``path`` when this process cannot write it: an existing ``path`` (a folder written
    into, or replaced) and the folder that will hold it (its writer lock and staging go beside
    it) must both be writable. A read-only folder is refused up front with one line, so a command
    neither fails part-way nor replaces (renames away) a folder the user made read-only."""
    path = Path(path)
    holder = path.parent
    while not holder.exists() and holder != holder.parent:
        holder = holder.parent
    for folder in ([path] if path.is_dir() else []) + [holder]:
        if not os.access(folder, os.W_OK | os.X_OK) or not _can_create_in(folder):
            where = "is" if folder == path else f"is in {folder}, which is"
            raise OutputRefused(f"{flag} {path} {where} not writable (read-only); nothing was written")


def _can_create_in(folder: Path) -> bool:
    """Whether a file can be created in ``folder``: for root, whom mode bits do not stop, an
    immutable folder or a read-only mount is found only by trying (a hidden file, removed at
    once); for others the mode bits already answered."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return True
    import tempfile

    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".culturebench-probe-"):
            return True
    except OSError:
        return False


def check_output_file(
    path: str | Path, *, overwrite: bool, inputs: Sequence[str | Path] = (), flag: str = "--out"
) -> None:
    """The policy for a single-file output (a report, a table, a JSON summary): not a folder,
    not one of the command's own inputs, not inside a release or run folder, and an existing
    file is replaced only with ``overwrite`` (culturebench cannot tell its own CSV or Markdown
    from a user's file, so it asks)."""
    path = Path(path)
    if path.is_dir():
        raise OutputRefused(f"{flag} {path} is a folder; give the path of a file")
    check_parents(path, flag)
    for given in inputs:
        if Path(given).exists() and path.resolve() == Path(given).resolve():
            raise OutputRefused(f"{flag} {path} is also an input of this command; it would be overwritten")
    if path.exists() and not overwrite:
        raise OutputRefused(f"{flag} {path} already exists (use --overwrite to replace it)")


def write_marker(folder: Path, kind: OutputKind, **info: object) -> None:
    """Mark ``folder`` as ``kind``'s output (call on the staged folder, before publishing)."""
    from culturebench import __version__

    record = {"kind": kind.name, "culturebench": __version__, **info}
    (folder / MARKER).write_text(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n", "utf-8")


@contextlib.contextmanager
def staged_output(
    path: str | Path, kind: OutputKind, *, overwrite: bool, flag: str = "--out", **info: object
) -> Iterator[Path]:
    """Check ``path`` (:func:`check_output`), hold its writer lock, and yield an empty staging
    folder; when the block succeeds the staging folder is marked and renamed onto ``path``
    (replacing our own earlier output only). When it fails nothing at ``path`` changed."""
    from culturebench.atomic import no_room_named, publish_dir, staging_dir

    path = Path(path)
    check_output(path, kind, overwrite=overwrite, flag=flag)
    with writer_lock(path, flag=flag), staging_dir(path) as staged:
        with no_room_named(path, kept="nothing was changed there"):  # disk full while staging
            yield staged
            write_marker(staged, kind, **info)
        replace = check_output(path, kind, overwrite=overwrite, flag=flag)  # unchanged since the start?
        publish_dir(staged, path, overwrite=replace)


# ---------------------------------------------------------------------- one writer
def lock_path(path: str | Path) -> Path:
    """The lock file of an output path: hidden, beside it (the output itself may be renamed)."""
    path = Path(path)
    return path.with_name(f".{path.name}.lock")


def _holder(lock: Path) -> str:
    try:
        text = lock.read_text(encoding="utf-8").strip()
    except OSError:
        return "another process"
    return text or "another process"


@contextlib.contextmanager
def writer_lock(path: str | Path, *, flag: str = "--out") -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path``'s lock file for the block. A second writer gets
    :class:`OutputRefused` naming the holder (pid, command, start time). The lock goes with
    the process, so a killed writer never leaves a stale lock; the lock file is removed on a
    normal exit."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock (Windows): no protection, no error
        yield
        return
    lock = lock_path(path)
    key = str(lock.resolve())
    if key in _HELD:  # re-entrant within this process (a stage inside a claimed command)
        yield
        return
    check_parents(Path(path), flag)
    created = [p for p in [lock.parent, *lock.parent.parents] if not p.exists()]
    lock.parent.mkdir(parents=True, exist_ok=True)
    while True:
        handle = open(lock, "a+", encoding="utf-8")  # noqa: SIM115 - held for the block
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise OutputRefused(
                f"{flag} {path} is being written by {_holder(lock)}; wait for it to finish or use another "
                "path"
            ) from None
        try:  # the file we locked may have been unlinked by a writer that just finished
            same = os.fstat(handle.fileno()).st_ino == os.stat(lock).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        handle.close()
    try:
        handle.seek(0)
        handle.truncate()
        command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv[:4]))
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        handle.write(f"pid {os.getpid()} ({command}, since {stamp})")
        handle.flush()
        _HELD.add(key)
        yield
    finally:
        _HELD.discard(key)
        with contextlib.suppress(OSError):
            os.unlink(lock)
        handle.close()
        for folder in created:  # innermost first: folders made only for the lock, if still empty
            with contextlib.suppress(OSError):
                folder.rmdir()


_HELD: set[str] = set()


@contextlib.contextmanager
def claimed_output(
    path: str | Path, kind: OutputKind, *, overwrite: bool, flag: str = "--out"
) -> Iterator[None]:
    """For a command that works long before it writes: check ``path`` and hold its writer
    lock for the whole block (a second writer stops at once, not after doing all the work).
    Write the result with :func:`staged_output` inside the block."""
    check_output(path, kind, overwrite=overwrite, flag=flag)
    with writer_lock(path, flag=flag):
        yield


@contextlib.contextmanager
def resumable_output(
    path: str | Path, kind: OutputKind, *, flag: str = "--out", **info: object
) -> Iterator[Path]:
    """For a command that fills its folder step by step and resumes a killed run (corpus
    counts, the BORSCH description pipeline): ``path`` must be new, empty or ``kind``'s own
    folder; it is created, marked at once (so a killed first run is recognised) and locked
    for the block. A folder of anything else is refused, never written into."""
    path = Path(path)
    clean_leftovers(path)
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise OutputRefused(f"{flag} {path} is a file or link, not a folder (nothing was written)")
    if path.is_dir() and any(path.iterdir()):
        _refuse_foreign(path, kind, flag, "write into it")
    else:
        check_parents(path, flag)
    with writer_lock(path, flag=flag):
        path.mkdir(parents=True, exist_ok=True)
        if not (path / MARKER).is_file():
            write_marker(path, kind, **info)
        yield path


@contextlib.contextmanager
def kept_only_if_used(path: str | Path, used: Callable[[Path], bool]) -> Iterator[None]:
    """For an output that fills in place and resumes (a run folder, a reproduction): when
    ``path`` was absent or empty at the start and the block fails before it holds anything
    worth resuming (``used(path)`` false, e.g. no answer came back from a model whose
    endpoint refuses connections), what the block wrote is removed again, so a failed first
    attempt leaves ``path`` as it was (absent stays absent). Call it under ``path``'s
    :func:`writer_lock`: no other writer can have added anything meanwhile."""
    import shutil

    path = Path(path)
    existed = path.is_dir()
    fresh = not path.exists() or (existed and not any(path.iterdir()))
    try:
        yield
    except BaseException:
        if fresh and path.is_dir() and not path.is_symlink() and not used(path):
            for child in list(path.iterdir()):
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        child.unlink()
            if not existed:
                with contextlib.suppress(OSError):
                    path.rmdir()
        raise


def clean_leftovers(path: str | Path) -> None:
    """Remove what killed writers of ``path`` left beside it: staging folders whose process
    died (:func:`culturebench.atomic.clean_stale_staging`) and a lock file nobody holds. A
    held lock is left alone; a writer that opened the file just before it goes notices the
    unlink and locks a fresh one (:func:`writer_lock` checks the inode)."""
    path = Path(path)
    if not path.parent.is_dir():
        return
    from culturebench.atomic import clean_stale_staging

    clean_stale_staging(path.parent)
    lock = lock_path(path)
    if not lock.is_file() or str(lock.resolve()) in _HELD:
        return
    try:
        import fcntl

        with open(lock, "a", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.unlink(lock)
    except (ImportError, OSError):
        return  # held by a live writer (or no flock): leave it
