"""Work on daemon threads that a signal can stop at once: the request loops of the image stage
and of the endpoint backends (:func:`run_stoppable`)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


def run_stoppable(
    function: Callable[[_Item], _Result], items: Sequence[_Item], concurrency: int
) -> Iterator[_Result]:
    """``function`` over ``items`` on at most ``concurrency`` daemon threads, yielding results
    as they complete. The caller's thread waits in short slices, so SIGTERM and Ctrl-C are
    handled at once; when it stops (signal, error, or the caller closes the generator) no
    further item starts and the threads are abandoned, not joined: a thread blocked in a DNS
    lookup or a read that never ends cannot hold the process (they are daemon threads, so
    the interpreter exits without them; a pool's atexit join would wait for them). An
    exception inside ``function`` is raised here."""
    tasks: queue.SimpleQueue[_Item] = queue.SimpleQueue()
    for item in items:
        tasks.put(item)
    finished: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
    stop = threading.Event()

    def worker() -> None:
        while not stop.is_set():
            try:
                item = tasks.get_nowait()
            except queue.Empty:
                return
            try:
                finished.put((True, function(item)))
            except BaseException as exc:  # handed to the caller's thread
                finished.put((False, exc))

    for k in range(max(1, min(concurrency, len(items)))):
        threading.Thread(target=worker, name=f"culturebench-worker-{k}", daemon=True).start()
    try:
        for _ in range(len(items)):
            while True:
                try:
                    ok, value = finished.get(timeout=0.2)  # short waits: signals run promptly
                    break
                except queue.Empty:
                    continue
            if not ok:
                raise value
            yield value
    finally:
        stop.set()  # nothing new starts; running items finish (or not) on their own
