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
    """Every file of a release folder (relative POSIX paths, sorted)."""
    return [
        ReleaseFile(p.relative_to(folder).as_posix(), p.stat().st_size, sha256_file(p))
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    ]


def hashes_in(folder: Path) -> dict[str, str]:
    """relative path -> sha256 of every file under ``folder`` (``.git*`` excluded)."""
    return {f.path: f.sha256 for f in release_files(folder) if not f.path.startswith(".git")}


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
    def check_ready(self) -> None:
        """Raise :class:`PublishError` if a real publish cannot start (e.g. no token)."""

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

    def _git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ)
        for key, value in _GIT_ENV.items():
            env.setdefault(key, value)
        result = subprocess.run(
            ["git", "-C", str(self.path), *args], capture_output=True, text=True, env=env, check=False
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

    def check_ready(self) -> None:
        if self.path.exists() and not self.exists():
            raise PublishError(f"{self.path} exists and is not a git repository")
        if self.exists() and self._git("status", "--porcelain").stdout.strip():
            raise PublishError(f"{self.path} has uncommitted changes; refusing to publish into it")

    def publish(self, folder: Path, message: str, tag: str) -> str:
        self.check_ready()
        if not self.exists():
            self.path.mkdir(parents=True, exist_ok=True)
            self._git("init", "-q", "-b", "main")
        head = self._git("rev-parse", "--verify", "-q", "HEAD", check=False).stdout.strip() or None
        try:
            for child in self.path.iterdir():
                if child.name == ".git":
                    continue
                shutil.rmtree(child) if child.is_dir() else child.unlink()
            shutil.copytree(folder, self.path, dirs_exist_ok=True)
            self._git("add", "-A")
            self._git("commit", "-q", "-m", message)
        except BaseException as exc:
            self._restore(head)
            if isinstance(exc, PublishError):
                raise
            raise PublishError(f"publishing to {self.path} failed: {exc}") from exc
        sha = self._git("rev-parse", "HEAD").stdout.strip()
        self._git("tag", "-a", tag, "-m", message.splitlines()[0], sha)
        return sha

    def _restore(self, head: str | None) -> None:
        if head:
            self._git("reset", "-q", "--hard", head, check=False)
            self._git("clean", "-q", "-fdx", check=False)
        else:
            for child in self.path.iterdir():
                if child.name != ".git":
                    shutil.rmtree(child) if child.is_dir() else child.unlink()
            self._git("rm", "-q", "-r", "--cached", ".", check=False)


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

    def check_ready(self) -> None:
        from huggingface_hub import get_token

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
