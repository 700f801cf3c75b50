"""The release pipeline: build -> validate (blocking) -> gate -> publish -> verify.

The gate refuses, before anything is written to the target, when: the release folder fails
validation or was built from a sample or from unpinned sources (a dirty build); the
CHANGELOG has no entry for the version or its ``Kind:`` differs from the computed change
kind; the version is not greater than the latest published one (or too small a bump for the
change); the tag exists with different content. Re-releasing identical content is a no-op.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from culturebench.changelog import changelog_section, declared_kind
from culturebench.errors import ReleaseRefused, ValidationFailed, VerificationFailed
from culturebench.manifest import MANIFEST_NAME, read_manifest, release_folder
from culturebench.release.targets import PublishTarget, ReleaseFile, release_files
from culturebench.release.versioning import (
    Version,
    VersionError,
    check_bump,
    classify_change,
    latest,
)
from culturebench.spec import load_spec

if TYPE_CHECKING:
    from culturebench.images.stage import ImageOptions


@dataclass
class ReleasePlan:
    """Everything a publish would do, computed without writing anything to the target."""

    dataset: str
    version: Version
    target: str
    folder: Path
    files: list[ReleaseFile]
    kind: str
    kind_reason: str
    previous: Version | None
    message: str
    private: bool = False
    gated: bool = False
    action: str = "publish"  # or "noop": the tag already holds identical content
    manifest: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def tag(self) -> str:
        return self.version.tag

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "version": str(self.version),
            "tag": self.tag,
            "target": self.target,
            "action": self.action,
            "repo_flags": {"private": self.private, "gated": "auto" if self.gated else False},
            "change_kind": self.kind,
            "change_reason": self.kind_reason,
            "previous": str(self.previous) if self.previous else None,
            "commit_message": self.message,
            "files": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in self.files],
            "total_bytes": sum(f.size for f in self.files),
        }


def _prepare_folder(
    name: str,
    version: Version,
    *,
    source: str | None,
    out_root: Path,
    rebuild: bool,
    images: ImageOptions | None = None,
) -> Path:
    from culturebench.builders import get_builder
    from culturebench.validation import validate_release

    spec = load_spec(name)
    if str(version) != spec.version:
        raise ReleaseRefused(
            f"datasets/{name}/dataset.yaml declares version {spec.version}, not {version}: bump it there "
            "(with a CHANGELOG entry) before releasing"
        )
    folder = release_folder(out_root, name, str(version))
    if folder.exists() and not rebuild:
        report = validate_release(folder)
        if not report.ok:
            raise ValidationFailed(
                report, f"{folder} fails validation (dirty build); rebuild it with --rebuild"
            )
        return folder
    get_builder(name).build(source=source, out_root=out_root, overwrite=rebuild, images=images)
    return folder


def _commit_message(plan_kind: str, reason: str, manifest: dict[str, Any]) -> str:
    lines = [f"Release {manifest['dataset']} {manifest['version']} ({plan_kind}: {reason})", ""]
    upstream = manifest.get("upstream", {})
    if upstream:
        lines.append(f"upstream: {upstream.get('repo')} @ {upstream.get('commit')}")
    for key, src in sorted(manifest["source"]["files"].items()):
        lines.append(f"source {key}: {src['file']} sha256:{src['sha256']}")
    builder = manifest.get("builder", {})
    lines.append(
        f"builder: {builder.get('class')} code {builder.get('code_version')}; "
        f"schema {manifest.get('schema_version')}"
    )
    return "\n".join(lines)


def plan_release(
    name: str,
    version: str,
    target: PublishTarget,
    *,
    source: str | None = None,
    out_root: str | Path = "dist",
    rebuild: bool = False,
    images: ImageOptions | None = None,
) -> ReleasePlan:
    """Build (or re-validate) the release folder and run the gate; write nothing to ``target``.
    ``images``: run the image stage when the folder is (re)built."""
    parsed = Version.parse(version)
    load_spec(name)  # unknown dataset -> clear error before any work
    folder = _prepare_folder(
        name, parsed, source=source, out_root=Path(out_root), rebuild=rebuild, images=images
    )
    manifest = read_manifest(folder)

    if manifest.get("sample"):
        raise ReleaseRefused(f"{folder} was built from the shipped sample, not the full upstream")
    unpinned = [
        k
        for k, f in manifest["source"]["files"].items()
        if not (f.get("matches_pin") or f.get("user_supplied"))
    ]
    if unpinned:
        raise ReleaseRefused(
            f"{folder} was built from sources that do not match their pinned sha256 ({', '.join(unpinned)}); "
            "update the pins in dataset.yaml or build from the pinned upstream"
        )
    entry = changelog_section((folder / "CHANGELOG.md").read_text(encoding="utf-8"), str(parsed))
    if entry is None:
        raise ReleaseRefused(f"CHANGELOG.md has no entry for {parsed}")
    declared = declared_kind(entry)

    tags = target.tags()
    previous = latest([t for t in tags if t != parsed.tag])
    old_manifest = target.manifest_at(previous.tag) if previous else None
    kind, reason = classify_change(old_manifest, manifest)

    plan = ReleasePlan(
        dataset=name,
        version=parsed,
        target=target.describe(),
        folder=folder,
        files=release_files(folder),
        kind=kind,
        kind_reason=reason,
        previous=previous,
        message=_commit_message(kind, reason, manifest),
        private=target.private,
        gated=target.gated,
        manifest=manifest,
    )
    if parsed.tag in tags:
        published = target.hashes_at(parsed.tag)
        local = {f.path: f.sha256 for f in plan.files}
        if published == local or (
            {k for k in {*published, *local} if published.get(k) != local.get(k)} == {MANIFEST_NAME}
            and same_content(target.manifest_at(parsed.tag), manifest)
        ):
            plan.action = "noop"
            return plan
        raise ReleaseRefused(f"tag {parsed.tag} already exists on {target.describe()} with different content")
    if kind == "none":
        raise ReleaseRefused(f"content is identical to the published {previous}; nothing to release")
    try:
        check_bump(previous, parsed, kind)  # type: ignore[arg-type]
    except VersionError as exc:
        raise ReleaseRefused(str(exc)) from exc
    if declared != kind:
        raise ReleaseRefused(
            f"CHANGELOG entry for {parsed} says 'Kind: {declared}', but the change is {kind} ({reason})"
        )
    return plan


def verify_release(target: PublishTarget, plan: ReleasePlan) -> list[str]:
    """Compare the published files with the release (the Hub: from its file listing) and load
    the published revision back to compare row counts with the manifest."""
    import tempfile

    from datasets.utils.logging import disable_progress_bar

    from datasets import load_dataset

    disable_progress_bar()
    problems = target.verify_files(plan.tag, plan.folder, release_files(plan.folder))
    remote = target.load_dataset_kwargs(plan.tag)
    with tempfile.TemporaryDirectory() as tmp:
        if remote is None:
            target.checkout(plan.tag, Path(tmp) / "checkout")
            remote = {"path": str(Path(tmp) / "checkout")}
        for config, cfg in plan.manifest["configs"].items():
            for split, info in cfg["splits"].items():
                ds = load_dataset(**remote, name=config, split=split, cache_dir=str(Path(tmp) / "cache"))
                if ds.num_rows != info["num_rows"]:
                    problems.append(
                        f"{config}/{split}: {ds.num_rows} rows loaded, manifest says {info['num_rows']}"
                    )
    return problems


@dataclass
class PublishResult:
    plan: ReleasePlan
    commit: str | None
    verified: bool


def publish_release(plan: ReleasePlan, target: PublishTarget, *, verify: bool = True) -> PublishResult:
    """Publish a planned release (one commit + tag) and verify it by loading it back."""
    if plan.action == "noop":
        return PublishResult(plan, None, verified=False)
    target.check_ready()
    commit = target.publish(plan.folder, plan.message, plan.tag)
    if verify:
        problems = verify_release(target, plan)
        if problems:
            raise VerificationFailed(problems, subject=f"{plan.tag} on {plan.target}")
    return PublishResult(plan, commit, verified=verify)


#: where an older manifest recorded the folder or URL its sources were read from
_LOCATION_KINDS = ("path", "shared", "url")


def portable_source(source: Any) -> Any:
    """A manifest's ``source`` without where it was read: the ``origin`` paths and URLs that
    manifests before culturebench recorded content only are dropped, and their location kinds
    (``path``, ``shared``, ``url``) read as ``upstream``."""
    if not isinstance(source, dict):
        return source
    out = {k: v for k, v in source.items() if k != "origin"}
    if out.get("kind") in _LOCATION_KINDS:
        out["kind"] = "upstream"
    files = out.get("files")
    if isinstance(files, dict):
        out["files"] = {
            key: ({k: v for k, v in f.items() if k != "origin"} if isinstance(f, dict) else f)
            for key, f in files.items()
        }
    return out


def same_content(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    """Whether two manifests describe the same release: equal once the source's location (a
    local path or URL, which says nothing about the bytes) is left out."""
    if not isinstance(old, dict):
        return False
    return {**old, "source": portable_source(old.get("source"))} == {
        **new,
        "source": portable_source(new.get("source")),
    }
