"""The newcomer's walk: every command line of the fenced shell blocks of README.md and
docs/**/*.md, run in order in a fresh folder as a new user would run them.

A fresh folder is a copy of the repository's tracked files, with ``../shared`` beside it and
the checkout's ``.venv`` linked in (installing is what CI does first). Every documented line
has an entry in :data:`PLAN`: it runs (with the page's placeholders filled as the page says:
``path/to/model`` is a model you have, so the tiny model the docs make; ``<time>`` is the
file the harness wrote), or it is not run offline, for a stated reason (a GPU, the network,
gated data, a hosted API, a server of your own, the inputs of such a run). A documented line
without an entry, or an entry that matches no line, is an error, so the plan follows the docs.

Each page starts from a fresh folder with what the page says it builds on (its ``before``:
the README's build of the releases it reads, the tiny models). Lines run one by one in one
``bash`` (variables set by one line are seen by the next), with the standard output and error
read as they come, so the walk measures the longest silence of every command.

    .venv/bin/python tests/docs_walk.py                 # every page; a table and the counts
    .venv/bin/python tests/docs_walk.py docs/images.md  # one page
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if __package__:  # imported by the suite (tests/ is a package)
    from tests.test_docs_commands import DOCS, SHELL, fenced_blocks
    from tests.tree_copy import clean_copy
else:  # run as a script: python tests/docs_walk.py
    sys.path.insert(0, str(REPO / "tests"))
    from test_docs_commands import DOCS, SHELL, fenced_blocks
    from tree_copy import clean_copy

# Why a documented line is not run offline. Each is what the newcomer walk of issue 41 counted
# as "failed as expected offline", or a line CI already runs.
NOT_RUN = {
    "install": "the install command; CI runs it first",
    "suite": "the test suite and the type check (CI runs them)",
    "gpu": "needs a CUDA GPU and a large model",
    "network": "needs the internet (the Hub, Wikidata, raw.githubusercontent.com, the real URLs)",
    "hub-token": "publishes to the Hub (needs HF_TOKEN)",
    "hosted": "needs a hosted API and its key",
    "gated": "needs the user's gated or private download",
    "server": "needs a server the user starts (vllm serve, Ollama, a Dask scheduler, olah)",
    "corpus": "needs a pretraining corpus the user downloads",
    "inputs": "reads the outputs of runs above that are not run offline (GPU, hosted, human ratings)",
    "benchmark": "a benchmark, run on demand (minutes each); docs/benchmarks.md",
}
TINY = "{tmp}/tiny"  # what `path/to/model`, `PATH`, `M`, `GEN` and `JUDGE` become


@dataclass(frozen=True)
class Entry:
    """What the walk does with the lines of a page that match ``pattern`` (a regex searched in
    the line with continuations joined and spaces collapsed): run it with ``fills`` applied
    (regex -> replacement, ``{tmp}`` the walk's own /tmp), or not run it (``skip``, a key of
    :data:`NOT_RUN`). ``expect`` is the exit code the page says the line ends with."""

    pattern: str
    skip: str | None = None
    fills: tuple[tuple[str, str], ...] = ()
    expect: int = 0


def run(pattern: str, *fills: tuple[str, str], expect: int = 0) -> Entry:
    return Entry(pattern, fills=fills, expect=expect)


def skip(pattern: str, why: str) -> Entry:
    assert why in NOT_RUN, why
    return Entry(pattern, skip=why)


MODEL = (r"(?<![\w/.-])(path/to/model|PATH|M|GEN|JUDGE)(?![\w/.-])", TINY)
LIMIT5 = (r"$", " --limit 5")
INSPECT_LOG = (r"<time>_(\S+)_<id>", r"*_\1_*")  # the log the run above wrote
LM_EVAL_SAMPLES = (r"<model>/samples_(\S+)_<time>", r"*/samples_\1_*")
BUILD_BORSCH = "culturebench build borsch"
BUILD_WWD = "culturebench build wwd"
TINY_TEXT = "culturebench eval tiny-model /tmp/tiny"

# page -> (the commands it builds on, its entries in order of precedence)
PLAN: dict[str, tuple[tuple[str, ...], tuple[Entry, ...]]] = {
    "README.md": (
        (),
        (
            skip(r"^python3 -m venv", "install"),
            skip(r"-m pytest -m vllm|scripts/wheel_check.sh", "install"),
            skip(r"-m pytest$|scripts/typecheck.py", "suite"),
            skip(r"^for k in|^CUDA_VISIBLE_DEVICES|^done; wait|eval merge|--backend vllm", "gpu"),
            skip(r"--model vllm/", "gpu"),
            skip(r"inspect-wwd-country", "inputs"),
            skip(r"eval results .*--to ", "hub-token"),
            run(r"^inspect eval culturebench/borsch_origin_qa", (r"hf/PATH", "hf/" + TINY)),
            run(r"--generations out/logs/inspect/<time>", INSPECT_LOG),
            run(r"^lm_eval", (r"pretrained=PATH", "pretrained=" + TINY), LIMIT5),
            run(r"out/lm_eval/<model>", LM_EVAL_SAMPLES),
            run(r"eval reproduce wwd .*--limit 20", (r"--limit 20", "--limit 3")),  # a smaller --limit
            run(r"."),
        ),
    ),
    "docs/benchmarks.md": ((), (skip(r"benchmarks/bench_", "benchmark"),)),
    "docs/building.md": ((), (run(r"."),)),
    "docs/site.md": ((), (run(r"."),)),
    "docs/corpus.md": (
        (BUILD_BORSCH,),
        (
            skip(r"--scheduler|hub:", "server"),
            skip(r"data/mc4-uk|laion/|laion-phash", "corpus"),
            skip(r"out/runs/corpus-uk|fig7", "inputs"),
        ),
    ),
    "docs/datasets/ash.md": (
        (TINY_TEXT,),
        (
            skip(r"eval paper ash", "inputs"),  # the authors' human ratings are not published
            run(r"--task generate", MODEL, LIMIT5),
            # a random tiny model rates nothing: the judge run and the summary of it say so (exit 2)
            run(
                r"--task judge",
                MODEL,
                (r"judge-JUDGE", "judge-tiny"),
                (r"repeats=3", "repeats=1"),
                LIMIT5,
                expect=2,
            ),
            run(r"ash-summary", expect=2),
            run(r"."),
        ),
    ),
    "docs/datasets/borsch.md": (
        (TINY_TEXT,),
        (
            skip(r"--source https://", "network"),
            skip(r"path/to/snapshot", "inputs"),  # the README's build reads ../shared instead
            skip(r"Qwen/Qwen2-7B", "gpu"),
            skip(r"borsch wikidata", "network"),
            run(r"--task origin-qa", MODEL, LIMIT5),
            run(r"."),
        ),
    ),
    "docs/datasets/foodieqa.md": (
        (),
        (
            skip(r"path/to/FoodieQA", "gated"),
            skip(r"--task text --lang zh --model M|single-name-only|eval paper foodieqa", "gated"),
            run(r"."),
        ),
    ),
    "docs/datasets/rubin.md": (
        (TINY_TEXT,),
        (
            skip(r"path/to/rubin-files", "gated"),
            skip(r"rubin-distractors", "gpu"),
            skip(r"eval paper rubin", "inputs"),
            run(r"--task mcqa-easy", MODEL, LIMIT5),
            run(r"."),
        ),
    ),
    "docs/datasets/wwd.md": (
        (TINY_TEXT,),
        (
            skip(r"check-urls", "network"),
            skip(r"openai-images", "hosted"),
            skip(r"stabilityai|llava-hf|vqa-probes --option images=out/runs/sd21|runs/dalle3", "gpu"),
            run(
                r"--task country --model path/to/",
                MODEL,
                (r"--repeat-seeds 0,1,2,3,4", "--repeat-seeds 0,1"),
                LIMIT5,
            ),
            run(r"."),
        ),
    ),
    "docs/evaluating.md": (
        (BUILD_BORSCH, BUILD_WWD, "culturebench build foodieqa", TINY_TEXT),
        (
            skip(r"--backend vllm|Phi-3-vision|Meta-Llama-3-70B", "gpu"),
            skip(r"^vllm serve|^ollama|--backend openai", "server"),
            skip(r"out/runs/qwen-origin-qa|out/answers.jsonl", "inputs"),
            run(r"--model path/to/model", MODEL),
            run(r"."),
        ),
    ),
    "docs/harnesses.md": (
        (BUILD_WWD, "culturebench build rubin", TINY_TEXT),
        (
            skip(r"--model vllm/|--model vllm ", "gpu"),
            skip(r"openai/gpt-4o", "hosted"),
            skip(r"--revision v1.0.0", "network"),
            skip(r"inspect-wwd-country", "inputs"),
            run(r"^inspect eval culturebench/rubin_mcqa", (r"hf/PATH", "hf/" + TINY), (r"$", " --limit 5")),
            run(r"^lm_eval --model hf", (r"pretrained=PATH", "pretrained=" + TINY), LIMIT5),
            run(r"out/lm_eval/<model>", LM_EVAL_SAMPLES),
            run(r"."),
        ),
    ),
    "docs/hub-results.md": (
        (),
        (
            skip(r"eval results .*--to ", "hub-token"),
            skip(r"hf/culturebench/borsch|out/runs/gpt35/country", "network"),
        ),
    ),
    "docs/images.md": (
        (BUILD_BORSCH,),
        (
            skip(r"--images --overwrite( --image-mirror| #|$)", "network"),
            run(r"--offline-images", expect=2),  # the cache is empty: the stage fails, keeps dist/
            run(r"."),
        ),
    ),
    "docs/paper-reports.md": ((), (skip(r"eval paper", "inputs"),)),
    "docs/releasing.md": (
        (),
        (
            skip(r"--repo culturebench/borsch", "hub-token"),
            skip(r"1\.1\.0", "inputs"),  # the next version: a checkout that has bumped it
            # the olah recipe runs: a local Hub server on a free port, stopped when the page ends
            run(r"olah|/dev/tcp/127.0.0.1/8090|^export HF_ENDPOINT|load_dataset", (r"\b8090\b", "{port}")),
            run(r"."),
        ),
    ),
    "docs/url-checks.md": ((), (skip(r"check-urls", "network"), run(r"."))),
}


@dataclass
class Outcome:
    page: str
    line: str  # as documented (continuations joined, spaces collapsed)
    ran: str | None = None  # what ran, fills applied
    skip: str | None = None
    rc: int | None = None
    expect: int = 0
    seconds: float = 0.0
    longest_silence: float = 0.0
    tail: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.skip:
            return f"not run: {self.skip}"
        return "ok" if self.rc == self.expect else f"FAILED (exit {self.rc}, expected {self.expect})"


def documented_lines(page: str) -> list[str]:
    """The page's command lines: fenced shell blocks, continuations joined, comment lines and
    trailing comments dropped, spaces collapsed."""
    out = []
    for language, body in fenced_blocks((REPO / page).read_text(encoding="utf-8")):
        if language not in SHELL:
            continue
        for line in body.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#\s.*$|^\s*#.*$", "", line)
            line = " ".join(line.split())
            if line:
                out.append(line)
    return out


def plan_problems() -> list[str]:
    """Documented lines no entry matches, pages without a plan, entries that match nothing."""
    problems = []
    pages = {str(p.relative_to(REPO)) for p in DOCS if documented_lines(str(p.relative_to(REPO)))}
    for page in sorted(pages - set(PLAN)):
        problems.append(f"{page}: a page with commands and no plan in tests/docs_walk.py")
    for page, (_before, entries) in PLAN.items():
        lines = documented_lines(page) if (REPO / page).is_file() else []
        used = set()
        for line in lines:
            entry = match(page, line)
            if entry is None:
                problems.append(f"{page}: no plan entry for {line!r}")
            else:
                used.add(entry)
        for entry in entries:
            if entry not in used:
                problems.append(f"{page}: the entry {entry.pattern!r} matches no documented line")
    return problems


def match(page: str, line: str) -> Entry | None:
    return next((e for e in PLAN[page][1] if re.search(e.pattern, line)), None)


def filled(line: str, entry: Entry, tmp: Path, port: int = 8090) -> str:
    line = re.sub(r"(?<![\w.-])/tmp/", "{tmp}/", line)  # the walk's own /tmp
    for pattern, replacement in entry.fills:
        line = re.sub(pattern, replacement, line)
    return line.replace("{tmp}", str(tmp)).replace("{port}", str(port))


def fresh_folder(root: Path) -> Path:
    """A copy of the tracked (and untracked, not ignored) files, ``../shared`` beside it and the
    checkout's ``.venv`` linked in."""
    repo = clean_copy(root / "culturebench")
    (repo / ".venv").symlink_to(REPO / ".venv")
    shared = REPO.parent / "shared"
    if shared.is_dir():
        (root / "shared").symlink_to(shared)
    return repo


def walk_page(page: str, root: Path, timeout_s: float = 900.0) -> list[Outcome]:
    """Run ``page``'s lines in order in a fresh folder under ``root``; one outcome a line."""
    folder = root / re.sub(r"\W", "_", page)
    folder.mkdir(parents=True)
    repo = fresh_folder(folder)
    tmp = folder / "tmp"
    tmp.mkdir()
    env = {
        **os.environ,
        "PATH": f"{REPO / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "CULTUREBENCH_CACHE": str(folder / "cache"),
        "HF_HOME": str(folder / "hf-home"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "INSPECT_DISPLAY": "plain",
        "COLUMNS": "80",
    }
    env.pop("CULTUREBENCH_PROGRESS_INTERVAL", None)  # the default interval, as users get it
    before, _entries = PLAN[page]
    port = free_port()
    outcomes = [Outcome(page, f"(before) {line}") for line in before]
    for outcome, line in zip(outcomes, before, strict=True):
        outcome.ran = filled(line, Entry("."), tmp)
    for line in documented_lines(page):
        entry = match(page, line)
        assert entry is not None, f"{page}: no plan entry for {line!r}"
        outcome = Outcome(page, line, skip=entry.skip, expect=entry.expect)
        if entry.skip is None:
            outcome.ran = filled(line, entry, tmp, port)
        outcomes.append(outcome)
    runnable = [o for o in outcomes if o.ran is not None]
    if runnable:
        _run_in_one_shell(runnable, repo, env, timeout_s)
    return outcomes


def free_port() -> int:
    """A loopback port nothing listens on now (for a server a page starts)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run_in_one_shell(outcomes: list[Outcome], cwd: Path, env: dict[str, str], timeout_s: float) -> None:
    """One bash runs the lines in order; a marker line before and after each gives its exit
    code; each output line's arrival time gives the command's longest silence."""
    marker = f"@@walk-{os.getpid()}-{time.time_ns()}"
    script = ["exec 2>&1"]
    for k, outcome in enumerate(outcomes):
        script += [f"echo '{marker} start {k}'", outcome.ran or "", f'echo "{marker} end {k} $?"']
    # its own process group: what a page starts in the background (olah) is stopped with it
    proc = subprocess.Popen(
        ["bash", "-c", "\n".join(script)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )

    def stop_group() -> None:  # the page's commands and background servers, by group id
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    killer = threading.Timer(timeout_s, stop_group)
    killer.start()
    current: Outcome | None = None
    started = last = time.monotonic()
    assert proc.stdout is not None
    try:
        for raw in proc.stdout:
            now = time.monotonic()
            text = raw.decode("utf-8", "replace").rstrip("\n")
            if text.startswith(marker):
                _, what, k, *rc = text.split(" ")
                if what == "start":
                    current, started, last = outcomes[int(k)], now, now
                    continue
                if current is not None:
                    current.rc = int(rc[0])
                    current.seconds = now - started
                    current.longest_silence = max(current.longest_silence, now - last)
                current = None
                if int(k) == len(outcomes) - 1:  # a background server keeps the pipe open
                    break
                continue
            if current is not None:
                current.longest_silence = max(current.longest_silence, now - last)
                current.tail = [*current.tail[-11:], text]
                last = now
    finally:
        killer.cancel()
        stop_group()
        proc.wait()
    if current is not None:  # killed at the deadline
        current.rc = -9
        current.seconds = time.monotonic() - started


def summary(outcomes: list[Outcome]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for o in outcomes:
        if o.line.startswith("(before)"):
            continue
        counts["ran, ok" if o.status == "ok" else ("ran, failed" if o.ran else f"not run: {o.skip}")] += 1
    return counts


def main(argv: list[str]) -> int:
    problems = plan_problems()
    if problems:
        print("\n".join(problems))
        return 2
    pages = argv or list(PLAN)
    root = Path(tempfile.mkdtemp(prefix="cb-docs-walk-"))
    outcomes: list[Outcome] = []
    for page in pages:
        got = walk_page(page, root)
        outcomes += got
        for o in got:
            silence = f"{o.longest_silence:5.1f} s silent" if o.ran else ""
            print(f"{o.status:34s} {o.seconds:6.1f} s {silence:>15s}  {page}: {o.line[:90]}", flush=True)
            if o.ran and o.status != "ok":
                print("    " + "\n    ".join(o.tail))
    counts = summary(outcomes)
    print("\n" + "\n".join(f"{n:4d}  {what}" for what, n in sorted(counts.items())))
    ran = [o for o in outcomes if o.ran]
    print(f"longest silence of a command: {max((o.longest_silence for o in ran), default=0):.1f} s")
    (root / "walk.json").write_text(json.dumps([asdict(o) for o in outcomes], indent=1), encoding="utf-8")
    print(f"record: {root / 'walk.json'}")
    return 0 if all(o.status == "ok" for o in ran) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
