"""Publish targets: the Hugging Face Hub (``--repo org/name``) and a local git repository
laid out like a Hub dataset repo (``--to git:PATH``) for staging and offline mirrors.

Both publish one release as one commit, then a ``vX.Y.Z`` tag on that commit. The tag is
created only after the commit succeeded, so a failed upload never leaves a tag behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.hashing import sha256_file


class PublishError(CultureBenchError):
    """Publishing failed; the target was left as it was (no tag was created)."""


@dataclass(frozen=True)
class ReleaseFile:
    """One file of a release folder as uploaded."""

    path: str
    size: int
    sha256: str


def release_files(folder: Path) -> list[ReleaseFile]:
    """The files a release folder publishes: exactly those its manifest lists (relative
    POSIX paths, sorted). Raises :class:`PublishError` when the folder holds anything else
    (a stray or hidden file, a symlink, a special file) or a listed file is missing, so no
    target ever uploads what validation did not see."""
    from culturebench.manifest import inventory_problems, listed_files, read_manifest

    folder = Path(folder)
    try:
        manifest = read_manifest(folder)
    except CultureBenchError as exc:
        raise PublishError(str(exc)) from None
    problems = inventory_problems(folder, manifest)
    if problems:
        where, problem = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise PublishError(f"{folder / where}: {problem}; refusing to publish{more}")
    out = []
    for rel in sorted(listed_files(manifest)):
        path = folder / rel
        if not path.is_file():
            raise PublishError(f"{path}: listed in the manifest but missing; refusing to publish")
        out.append(ReleaseFile(rel, path.stat().st_size, sha256_file(path)))
    return out


def hashes_in(folder: Path) -> dict[str, str]:
    """relative path -> sha256 of every regular file under ``folder`` (``.git*`` and
    ``.cache`` excluded); used on checkouts of published tags."""
    return {
        p.relative_to(folder).as_posix(): sha256_file(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
        and not p.is_symlink()
        and not p.relative_to(folder).as_posix().startswith((".git", ".cache"))
    }


def git_blob_sha1(path: Path) -> str:
    """The git blob id of a file (sha1 of ``blob <size>\\0`` + its bytes), as the Hub lists
    it for files not stored in LFS."""
    import hashlib

    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def compare_listing(listed: dict[str, Any], folder: Path, files: list[ReleaseFile]) -> list[str]:
    """Problems between a remote file listing (path -> entry with ``blob_id`` and, for LFS
    files, ``lfs.sha256``) and the release's files: wrong content, missing or extra files."""
    problems = []
    expected = {f.path: f for f in files}
    for path, release_file in sorted(expected.items()):
        entry = listed.get(path)
        if entry is None:
            problems.append(f"{path}: not published")
            continue
        lfs = getattr(entry, "lfs", None)
        if lfs is not None:
            if lfs.sha256 != release_file.sha256:
                problems.append(f"{path}: expected sha256 {release_file.sha256}, published {lfs.sha256}")
        elif entry.blob_id != git_blob_sha1(folder / path):
            problems.append(f"{path}: the published git blob {entry.blob_id} is not the local file's")
    for path in sorted(set(listed) - set(expected) - {".gitattributes"}):
        problems.append(f"{path}: published but not part of the release")
    return problems


class PublishTarget(ABC):
    """Where releases go."""

    #: Repository settings the plan reports (Hub only).
    private: bool = False
    gated: bool = False

    @abstractmethod
    def describe(self) -> str: ...

    @abstractmethod
    def tags(self) -> list[str]:
        """Existing tags (empty when the repository does not exist yet)."""

    @abstractmethod
    def checkout(self, tag: str, dest: Path) -> None:
        """Write the files of ``tag`` into the empty folder ``dest``."""

    @abstractmethod
    def publish(self, folder: Path, message: str, tag: str) -> str:
        """Commit the release folder as the whole repository content, tag it, return the sha."""

    @abstractmethod
    def check_ready(self, *, dry_run: bool = False) -> None:
        """Raise :class:`PublishError` if a real publish cannot start (e.g. no token);
        ``dry_run``: check only, change nothing."""

    def manifest_at(self, tag: str) -> dict[str, Any] | None:
        with tempfile.TemporaryDirectory() as tmp:
            self.checkout(tag, Path(tmp))
            path = Path(tmp) / "manifest.json"
            return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    def hashes_at(self, tag: str) -> dict[str, str]:
        with tempfile.TemporaryDirectory() as tmp:
            self.checkout(tag, Path(tmp))
            return hashes_in(Path(tmp))

    def load_dataset_kwargs(self, tag: str) -> dict[str, Any] | None:
        """How ``datasets.load_dataset`` reads this tag remotely (None: check a checkout)."""
        return None

    def verify_files(self, tag: str, folder: Path, files: list[ReleaseFile]) -> list[str]:
        """Problems between the files published at ``tag`` and the release's ``files``. The
        default checks out the tag and compares sha256s."""
        expected = {f.path: f.sha256 for f in files}
        got = self.hashes_at(tag)
        return [
            f"{path}: expected sha256 {expected.get(path)}, published {got.get(path)}"
            for path in sorted(set(expected) | set(got))
            if expected.get(path) != got.get(path)
        ]


# ---------------------------------------------------------------------- local git
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "culturebench",
    "GIT_AUTHOR_EMAIL": "releases@culturebench.invalid",
    "GIT_COMMITTER_NAME": "culturebench",
    "GIT_COMMITTER_EMAIL": "releases@culturebench.invalid",
}


class GitTarget(PublishTarget):
    """A git repository on disk with the release at its root (like a Hub dataset repo)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def describe(self) -> str:
        return f"git:{self.path}"

    def _git(
        self, *args: str, check: bool = True, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        full = dict(os.environ)
        for key, value in _GIT_ENV.items():
            full.setdefault(key, value)
        full.update(env or {})
        result = subprocess.run(
            ["git", "-C", str(self.path), *args], capture_output=True, text=True, env=full, check=False
        )
        if check and result.returncode != 0:
            raise PublishError(f"git {' '.join(args)} failed in {self.path}: {result.stderr.strip()}")
        return result

    def exists(self) -> bool:
        return (self.path / ".git").exists()

    def tags(self) -> list[str]:
        if not self.exists():
            return []
        return [t for t in self._git("tag", "--list").stdout.split() if t]

    def checkout(self, tag: str, dest: Path) -> None:
        archive = subprocess.run(
            ["git", "-C", str(self.path), "archive", "--format=tar", tag], capture_output=True, check=False
        )
        if archive.returncode != 0:
            raise PublishError(f"cannot read {tag} from {self.path}: {archive.stderr.decode().strip()}")
        with tempfile.TemporaryFile() as handle:
            handle.write(archive.stdout)
            handle.seek(0)
            with tarfile.open(fileobj=handle) as tar:
                tar.extractall(dest, filter="data")

    def check_ready(self, *, dry_run: bool = False) -> None:
        """Refuse a target that is not ours or holds anything a publish could lose.

        Accepted: a missing or empty folder, or a git repository whose commits are all
        release commits (a ``manifest.json`` at the root of HEAD), with no uncommitted
        changes and no untracked or ignored files. A publish interrupted after its commit
        was recorded is finished here first (see :meth:`_recover`).
        """
        if self.path.exists() and not self.path.is_dir():
            raise PublishError(f"{self.path} exists and is not a folder")
        if not self.exists():
            if self.path.exists() and any(self.path.iterdir()):
                raise PublishError(
                    f"{self.path} is a non-empty folder and not a git repository; "
                    "give an empty folder or a dataset repo made by culturebench"
                )
            return
        if not dry_run:
            self._recover()
        head = self._head()
        if head is not None:
            has_manifest = self._git("cat-file", "-e", f"{head}:manifest.json", check=False).returncode == 0
            if not has_manifest:
                raise PublishError(
                    f"{self.path} is a git repository that is not a culturebench dataset repo "
                    "(no manifest.json at HEAD); refusing to replace its content"
                )
        dirty = self._git("status", "--porcelain", "--ignored", "--untracked-files=all").stdout.splitlines()
        if dirty:
            raise PublishError(
                f"{self.path} has uncommitted, untracked or ignored files ({dirty[0][3:]}"
                + (f" and {len(dirty) - 1} more" if len(dirty) > 1 else "")
                + "); refusing to publish into it (nothing is ever deleted that git cannot restore)"
            )

    def _head(self) -> str | None:
        return self._git("rev-parse", "--verify", "-q", "HEAD", check=False).stdout.strip() or None

    @property
    def _pending(self) -> Path:
        return self.path / ".git" / "culturebench-publish-pending"

    def _recover(self) -> None:
        """Finish (or forget) a publish killed between moving the branch and updating the
        working tree: the pending file names the commit before and the commit made."""
        if not self._pending.exists():
            return
        _old, _, new = self._pending.read_text(encoding="utf-8").strip().partition(" ")
        head = self._head()
        if head == new:  # the commit was recorded: bring index and working tree to it
            self._git("reset", "-q", "--hard", new)
        self._pending.unlink()

    def publish(self, folder: Path, message: str, tag: str) -> str:
        """Commit exactly the release's listed files as the whole tree, then tag.

        The commit is built in a temporary index from the release folder (the target's own
        index and working tree are untouched until the branch has moved), so a publish
        killed at any point leaves the repository at the old commit, or at the new one with
        a pending file that the next run uses to finish the working-tree update.
        """
        files = release_files(folder)
        self.check_ready()
        if not self.exists():
            self.path.mkdir(parents=True, exist_ok=True)
            self._git("init", "-q", "-b", "main")
        head = self._head()
        branch = self._git("symbolic-ref", "-q", "HEAD", check=False).stdout.strip() or "refs/heads/main"
        with tempfile.TemporaryDirectory() as tmp:
            index = Path(tmp) / "index"
            env = {"GIT_INDEX_FILE": str(index)}
            for f in files:  # add only the listed files, by content, never a link
                blob = self._git(
                    "hash-object", "-w", "--", str(Path(folder).resolve() / f.path)
                ).stdout.strip()
                self._git("update-index", "--add", "--cacheinfo", f"100644,{blob},{f.path}", env=env)
            tree = self._git("write-tree", env=env).stdout.strip()
        if head and self._git("rev-parse", f"{head}^{{tree}}").stdout.strip() == tree:
            # the same content is committed already: a publish killed between its commit and
            # its tag (or a release of an unchanged tree) is tagged, without an empty commit
            self._git("tag", "-a", tag, "-m", message.splitlines()[0], head)
            return head
        parents = ["-p", head] if head else []
        commit = self._git("commit-tree", tree, *parents, "-m", message).stdout.strip()
        self._pending.write_text(f"{head or '-'} {commit}\n", encoding="utf-8")
        self._git("update-ref", "-m", f"culturebench: {tag}", branch, commit, head or "")
        self._git("reset", "-q", "--hard", commit)
        self._pending.unlink()
        self._git("tag", "-a", tag, "-m", message.splitlines()[0], commit)
        return commit


# ---------------------------------------------------------------------- Hugging Face Hub
class HubTarget(PublishTarget):
    """A dataset repository on the Hugging Face Hub (or any Hub-compatible endpoint).

    The token comes from the standard mechanisms (``HF_TOKEN``, ``hf auth login``); it is
    never printed, logged or written anywhere by culturebench.
    """

    def __init__(
        self, repo_id: str, *, private: bool = False, gated: bool = False, endpoint: str | None = None
    ) -> None:
        from huggingface_hub import HfApi

        from culturebench.hub_http import hub_deadline

        hub_deadline()  # every request of the release has a deadline
        self.repo_id = repo_id
        self.private = private
        self.gated = gated
        self.endpoint = endpoint
        self.api = HfApi(endpoint=endpoint)

    def describe(self) -> str:
        return f"hub:{self.repo_id}" + (f" at {self.endpoint}" if self.endpoint else "")

    def tags(self) -> list[str]:
        from huggingface_hub.errors import RepositoryNotFoundError

        try:
            refs = self.api.list_repo_refs(self.repo_id, repo_type="dataset")
        except RepositoryNotFoundError:
            return []
        except Exception as exc:
            raise PublishError(f"cannot list the tags of {self.describe()}: {exc}") from exc
        return [t.name for t in refs.tags]

    def checkout(self, tag: str, dest: Path) -> None:
        from huggingface_hub import snapshot_download

        with tempfile.TemporaryDirectory() as cache:
            try:
                local = snapshot_download(
                    self.repo_id, repo_type="dataset", revision=tag, cache_dir=cache, endpoint=self.endpoint
                )
            except Exception as exc:
                raise PublishError(f"cannot download {tag} from {self.describe()}: {exc}") from exc
            shutil.copytree(local, dest, dirs_exist_ok=True, symlinks=False)
            cached = dest / ".cache"
            if cached.exists():
                shutil.rmtree(cached)

    def check_ready(self, *, dry_run: bool = False) -> None:
        from huggingface_hub import get_token

        if dry_run:  # a plan needs no token; the real release asks for one
            return
        if not get_token():
            raise PublishError(
                "no Hugging Face token found: set HF_TOKEN or run `hf auth login` (nothing was published)"
            )

    def publish(self, folder: Path, message: str, tag: str) -> str:
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        self.check_ready()
        title, _, body = message.partition("\n")
        try:
            self.api.create_repo(self.repo_id, repo_type="dataset", private=self.private, exist_ok=True)
            if self.gated:
                self.api.update_repo_settings(self.repo_id, repo_type="dataset", gated="auto")
            existing = set()
            try:
                existing = set(self.api.list_repo_files(self.repo_id, repo_type="dataset"))
            except Exception:  # a brand-new repo may have no main branch yet
                existing = set()
            files = {f.path for f in release_files(folder)}
            operations: list[Any] = [
                CommitOperationAdd(path_in_repo=path, path_or_fileobj=str(folder / path))
                for path in sorted(files)
            ]
            operations += [
                CommitOperationDelete(path_in_repo=path)
                for path in sorted(existing - files)
                if path != ".gitattributes"
            ]
            commit = self.api.create_commit(
                self.repo_id,
                repo_type="dataset",
                operations=operations,
                commit_message=title,
                commit_description=body.strip() or None,
            )
        except Exception as exc:
            raise PublishError(f"upload to {self.describe()} failed, no tag was created: {exc}") from exc
        sha = commit.oid
        try:
            self.api.create_tag(self.repo_id, repo_type="dataset", tag=tag, revision=sha, tag_message=title)
        except Exception as exc:
            raise PublishError(
                f"commit {sha} was uploaded to {self.describe()} but tagging {tag} failed: {exc}; "
                f"re-run the release to tag it (the content check will match)"
            ) from exc
        return sha

    def load_dataset_kwargs(self, tag: str) -> dict[str, Any] | None:
        return {"path": self.repo_id, "revision": tag}

    def verify_files(self, tag: str, folder: Path, files: list[ReleaseFile]) -> list[str]:
        """From the Hub's file listing, without downloading the tag again: LFS files by the
        sha256 the Hub reports, other files by their git blob id computed here."""
        try:
            entries = self.api.list_repo_tree(self.repo_id, repo_type="dataset", revision=tag, recursive=True)
            listed = {e.path: e for e in entries if hasattr(e, "blob_id")}
        except Exception as exc:
            raise PublishError(f"cannot list {tag} on {self.describe()}: {exc}") from exc
        return compare_listing(listed, Path(folder), files)


def hub_flags(spec, private: bool | None, gated: bool | None) -> tuple[bool, bool]:
    """(private, gated) for a Hub release: the command line wins, else ``dataset.yaml``'s
    ``release:`` block (e.g. a gated dataset), else public and ungated."""
    defaults = spec.release_defaults
    return (
        bool(defaults.get("private", False)) if private is None else private,
        bool(defaults.get("gated", False)) if gated is None else gated,
    )


def parse_target(
    repo: str | None,
    to: str | None,
    *,
    private: bool = False,
    gated: bool = False,
    endpoint: str | None = None,
) -> PublishTarget:
    """Build the target from the CLI options (exactly one of ``--repo`` / ``--to``)."""
    if bool(repo) == bool(to):
        raise CultureBenchError("give exactly one target: --repo ORG/NAME (Hub) or --to git:PATH")
    if to:
        if not to.startswith("git:") or len(to) <= 4:
            raise CultureBenchError(f"--to must look like git:PATH, got {to!r}")
        if private or gated or endpoint:
            raise CultureBenchError(
                "--private/--gated/--endpoint apply to Hub repos (--repo), not to git targets"
            )
        return GitTarget(to[4:])
    assert repo is not None
    if repo.count("/") != 1 or not all(repo.split("/")):
        raise CultureBenchError(f"--repo must be ORG/NAME, got {repo!r}")
    return HubTarget(repo, private=private, gated=gated, endpoint=endpoint)
