"""A response cache shared across runs: a model's answer to a request, kept so that a second
reproduction into another folder, a re-planned shard, or the same prompt in two cells (BORSCH's
``parallel`` config repeats the ``ru``/``uk`` dishes) is not paid for twice.

The key is content-addressed: the sha256 of the backend's identity (its ``describe()`` without
library versions and speed-only options: backend, model id and revision or local weights
sha256, the options that change outputs, the sampling settings) and the request (prompt text,
images by sha256). A greedy request is keyed by its content alone, so the same prompt under
another id is a hit. A sampled request is keyed by its own seed too (the run's seed and the
request id, :func:`~culturebench.eval.backends.base.request_seed`): another seed is never a
hit. A sampled request without a seed is never cached.

Storage is one SQLite file (``<cache>/responses/responses.sqlite``, in WAL mode with a busy
timeout: several processes, e.g. the shards of one reproduction, write to it at once). The
location is ``$CULTUREBENCH_RESPONSE_CACHE`` (``off`` disables it), else under
:func:`culturebench.cache_dirs.cache_root`. Only text answers are cached: an answer that is
not text is the model's failure, asked again next time.

The cache is invisible in a run's files: ``samples.jsonl`` and ``results.json`` are the same
bytes whether an answer came from the model or from here (a warm rerun, a merge of warm shards
and a cold run agree byte for byte); how many answers it gave is told on the terminal only.
A file at the cache's path that is not this cache (another SQLite database, any other file,
a path under a file) is refused with one line naming it; it is never written into.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.hashing import sha256_bytes, sha256_text

ENV = "CULTUREBENCH_RESPONSE_CACHE"
FILE = "responses.sqlite"
FORMAT = 1  # part of every key: a change of what a key covers starts a new cache
# what a backend's describe() records that does not change its answers
NOT_IDENTITY = ("versions", "runtime", "sampling")  # (the sampling is keyed separately, per seed)
# the one table a cache holds, and its columns in order
TABLE = "responses"
COLUMNS = ("key", "model", "output", "created", "used")


def default_path() -> Path | None:
    """Where the cache lives, or None when ``$CULTUREBENCH_RESPONSE_CACHE`` is ``off``."""
    from culturebench.cache_dirs import cache_root

    env = os.environ.get(ENV, "").strip()
    if env.lower() in ("off", "0", "no", "false"):
        return None
    folder = Path(env).expanduser() if env else cache_root() / "responses"
    return folder / FILE


def model_identity(description: Mapping[str, Any]) -> dict[str, Any]:
    """A backend's ``describe()`` without what does not change its answers."""
    return {k: v for k, v in description.items() if k not in NOT_IDENTITY}


def request_key(model: Mapping[str, Any], request: Any, sampling: Mapping[str, Any]) -> str | None:
    """The cache key of one request to one model, or None when its answer is not
    reproducible (sampled without a seed)."""
    from culturebench.eval.backends.base import request_seed

    greedy = float(sampling.get("temperature") or 0) == 0.0
    seed = sampling.get("seed")
    if not greedy and seed is None:
        return None
    content: dict[str, Any] = {
        "format": FORMAT,
        "model": model,
        "sampling": dict(sampling),
        "prompt": request.prompt,
        "images": [sha256_bytes(image) for image in request.images],
    }
    if getattr(request, "json_schema", None):  # a constrained answer is another answer
        content["json_schema"] = request.json_schema
    if greedy:  # the answer depends on the content only: the same prompt elsewhere is a hit
        content["sampling"] = {k: v for k, v in sampling.items() if k != "seed"}
    else:  # each request samples with its own seed (request_seed): never another's answer
        content["request_seed"] = request_seed(int(seed), request.id)  # type: ignore[arg-type]
    return sha256_text(json.dumps(content, sort_keys=True, ensure_ascii=False, default=str))


@dataclass
class CacheStats:
    """What the cache holds: entries, bytes on disk, oldest and newest use (epoch seconds)."""

    path: Path
    entries: int
    bytes: int
    models: int
    oldest: float | None
    newest: float | None


@dataclass
class CacheCount:
    """What the cache did for one run: of the answers generated now, how many it gave
    (``hits``) and how many were asked of the model (``sent``). Told on the terminal, never
    written into the run's files."""

    hits: int = 0
    sent: int = 0

    def add(self, hits: int, answers: int) -> None:
        self.hits += hits
        self.sent += answers - hits

    @classmethod
    def total(cls, counts: Iterable[CacheCount]) -> CacheCount:
        """The counts of several runs (the cells of a reproduction) added up."""
        total = cls()
        for count in counts:
            total.add(count.hits, count.hits + count.sent)
        return total

    def line(self) -> str:
        """``response cache: 120 of 120 answers reused, 0 asked of the model``."""
        return (
            f"response cache: {self.hits:,} of {self.hits + self.sent:,} answers reused, "
            f"{self.sent:,} asked of the model"
        )


class CacheError(CultureBenchError):
    """The response cache's path holds something else, or its database fails."""


def _refused(path: Path, why: str) -> CacheError:
    return CacheError(
        f"response cache {path}: {why}; point ${ENV} at another folder, or set {ENV}=off to run without it"
    )


def check_location(path: Path) -> None:
    """Refuse a cache path that cannot hold the cache: one under a file (a parent that is
    not a folder), or a folder where the database file goes."""
    for parent in path.parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise _refused(path, f"{parent} is a file, not a folder")
            break
    if path.is_dir():
        raise _refused(path, "is a folder, not the cache's database file")


class ResponseCache:
    """The cache at ``path`` (its folder is created on first use)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            check_location(self.path)
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = _setup(self.path)
            except sqlite3.DatabaseError as exc:
                if "not a database" in str(exc):
                    raise _refused(self.path, "is not an SQLite database (not this cache)") from None
                raise _refused(self.path, f"cannot be opened ({exc})") from None
            except (OSError, sqlite3.Error) as exc:
                raise _refused(self.path, f"cannot be opened ({exc})") from None
            self._db = db
        return self._db

    def check(self) -> None:
        """Open the cache now (a run does so before it writes anything): a path that cannot
        hold it, or a file that is not this cache, raises :class:`CacheError` naming it."""
        self._connect()

    def _failed(self, exc: BaseException) -> CacheError:
        """A database error while reading or writing the cache, as one line naming it."""
        return _refused(self.path, f"cannot be used ({type(exc).__name__}: {exc})")

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        """The cached answers of ``keys`` that have one (their last use is updated)."""
        if not keys:
            return {}
        db = self._connect()
        found: dict[str, str] = {}
        unique = list(dict.fromkeys(keys))
        try:
            for start in range(0, len(unique), 500):
                part = unique[start : start + 500]
                marks = ",".join("?" * len(part))
                for key, output in db.execute(
                    f"SELECT key, output FROM responses WHERE key IN ({marks})", part
                ):
                    found[key] = output
            if found:
                now = time.time()
                db.executemany("UPDATE responses SET used = ? WHERE key = ?", [(now, k) for k in found])
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        return found

    def put_many(self, entries: Sequence[tuple[str, str, str]]) -> None:
        """Store ``(key, model label, answer)`` triples (an existing key keeps its answer: two
        processes that raced to answer the same request agree, or the first one wins)."""
        if not entries:
            return
        now = time.time()
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(
                    "INSERT OR IGNORE INTO responses (key, model, output, created, used) "
                    "VALUES (?, ?, ?, ?, ?)",
                    [(key, model, output, now, now) for key, model, output in entries],
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise self._failed(exc) from None

    def stats(self) -> CacheStats:
        check_location(self.path)
        if not self.path.is_file():
            return CacheStats(self.path, 0, 0, 0, None, None)
        db = self._connect()
        try:
            entries, models, oldest, newest = db.execute(
                "SELECT COUNT(*), COUNT(DISTINCT model), MIN(used), MAX(used) FROM responses"
            ).fetchone()
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return CacheStats(self.path, int(entries), size, int(models), oldest, newest)

    def prune(self, *, max_bytes: int | None = None, older_than_s: float | None = None) -> int:
        """Drop entries unused for ``older_than_s`` seconds, then the least recently used until
        the file holds at most ``max_bytes``; returns how many were dropped."""
        db = self._connect()
        try:
            return _prune(db, max_bytes, older_than_s)
        except sqlite3.Error as exc:
            raise self._failed(exc) from None

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def _prune(db: sqlite3.Connection, max_bytes: int | None, older_than_s: float | None) -> int:
    """:meth:`ResponseCache.prune` on an open database."""
    dropped = 0
    if older_than_s is not None:
        cursor = db.execute("DELETE FROM responses WHERE used < ?", (time.time() - older_than_s,))
        dropped += cursor.rowcount
    if max_bytes is not None:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        while True:
            (pages,) = db.execute("PRAGMA page_count").fetchone()
            (page_size,) = db.execute("PRAGMA page_size").fetchone()
            (free,) = db.execute("PRAGMA freelist_count").fetchone()
            if (pages - free) * page_size <= max_bytes:
                break
            (count,) = db.execute("SELECT COUNT(*) FROM responses").fetchone()
            if not count:
                break
            batch = max(1, count // 10)
            cursor = db.execute(
                "DELETE FROM responses WHERE key IN (SELECT key FROM responses ORDER BY used LIMIT ?)",
                (batch,),
            )
            dropped += cursor.rowcount
    db.execute("VACUUM")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the space comes back from the log too
    return dropped


def _check_schema(db: sqlite3.Connection, path: Path) -> None:
    """An existing database must be this cache: the one table ``responses`` with its columns
    (a new, empty database is made one). Checked before anything is written, so another
    program's database is never changed (not even switched to WAL)."""
    tables = [
        name
        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not name.startswith("sqlite_")
    ]
    if not tables:
        return
    if tables != [TABLE]:
        raise _refused(
            path, f"is another SQLite database (tables: {', '.join(sorted(tables))}), not this cache"
        )
    columns = tuple(row[1] for row in db.execute(f"PRAGMA table_info({TABLE})"))
    if columns != COLUMNS:
        raise _refused(
            path,
            f"its table {TABLE!r} has the columns {', '.join(columns)}, "
            f"not this cache's {', '.join(COLUMNS)}",
        )


def _setup(path: Path, wait_s: float = 60.0) -> sqlite3.Connection:
    """Open (and on first use create) the database in WAL mode, after checking that an existing
    one is this cache (:func:`_check_schema`). Two processes that open a new cache at once race
    for the switch to WAL, which SQLite answers "locked" without waiting for the busy timeout:
    the loser waits and tries again, up to ``wait_s``."""
    deadline = time.monotonic() + wait_s
    delay = 0.01
    while True:
        db = sqlite3.connect(path, timeout=wait_s, isolation_level=None)
        try:
            _check_schema(db, path)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                "output TEXT NOT NULL, created REAL NOT NULL, used REAL NOT NULL)"
            )
            return db
        except sqlite3.OperationalError as exc:
            db.close()
            if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
        except BaseException:
            db.close()
            raise


def open_cache(enabled: bool = True) -> ResponseCache | None:
    """The shared cache, or None when disabled (``--no-cache`` or ``$CULTUREBENCH_RESPONSE_CACHE=off``)."""
    if not enabled:
        return None
    path = default_path()
    return ResponseCache(path) if path is not None else None
