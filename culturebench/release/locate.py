"""Find a release folder from what a user types: a folder, a dataset name (its latest
version under the release root), or ``hub:ORG/NAME[@REV]`` (downloaded from the Hub)."""

from __future__ import annotations

from pathlib import Path

from culturebench.errors import CultureBenchError


def locate_release(target: str, dist: Path) -> Path:
    """A release folder, a dataset name (latest version under ``dist``), or hub:ORG/NAME[@REV]."""
    from culturebench.release.versioning import Version, VersionError

    if target.startswith("hub:"):
        from huggingface_hub import snapshot_download

        from culturebench.hub_http import hub_deadline
        from culturebench.release.targets import HubTarget
        from culturebench.release.versioning import latest

        hub_deadline()
        repo, _, revision = target[4:].partition("@")
        if not revision:  # the latest release tag, else main
            newest = latest(HubTarget(repo).tags())
            revision = newest.tag if newest else "main"
        return Path(snapshot_download(repo, repo_type="dataset", revision=revision))
    path = Path(target)
    if (path / "manifest.json").is_file():
        return path
    versions = []
    for child in (dist / target).glob("*") if (dist / target).is_dir() else []:
        try:
            versions.append((Version.parse(child.name), child))
        except VersionError:
            continue
    if not versions:
        raise CultureBenchError(
            f"{target!r} is neither a release folder nor a dataset with releases under {dist}"
        )
    return max(versions)[1]
