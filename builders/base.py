"""The builder interface and the release-folder pipeline every dataset shares.

A dataset's builder only implements :meth:`DatasetBuilder.generate` (sources -> rows per
config and split). :meth:`DatasetBuilder.build` does the rest, identically for every
dataset: encode with the declared features, write deterministic Parquet, the changelog,
the build report, the card and Croissant, validate, write the manifest, and only then
rename the staged folder into ``<out>/<dataset>/<version>``. On any failure nothing is left
behind.
"""

from __future__ import annotations

import json
import logging
import shutil
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from culturebench.atomic import no_room_named, publish_dir, staging_dir, write_text_atomic
from culturebench.builders.sources import SourceSet, resolve_sources
from culturebench.buildlog import BuildLog
from culturebench.changelog import declared_kind
from culturebench.errors import BuildError, CultureBenchError, ValidationFailed
from culturebench.hashing import sha256_text
from culturebench.manifest import MANIFEST_FORMAT, dumps, release_folder, write_manifest
from culturebench.parquet_io import to_table, write_split
from culturebench.registry import DatasetName
from culturebench.spec import DatasetSpec, load_spec

if TYPE_CHECKING:
    from culturebench.images.stage import ImageOptions

logger = logging.getLogger("culturebench.build")

Rows = dict[str, dict[str, list[dict[str, Any]]]]  # config -> split -> rows
StepCallback = Callable[[str], None]


@dataclass
class BuildResult:
    """What a build produced."""

    folder: Path
    manifest: dict[str, Any]
    log: BuildLog
    report: Any  # culturebench.validation.findings.ValidationReport


def library_versions() -> dict[str, str]:
    """Versions of the libraries whose behaviour shapes the release bytes."""
    from importlib.metadata import PackageNotFoundError, version

    import babel.core

    out = {}
    for name in (
        "culturebench",
        "datasets",
        "pyarrow",
        "openpyxl",
        "babel",
        "pycountry",
        "mlcroissant",
        "pandera",
    ):
        try:
            out[name] = version(name)
        except PackageNotFoundError:  # pragma: no cover
            out[name] = "not installed"
    out["cldr"] = str(babel.core.get_cldr_version())
    return out


class DatasetBuilder(ABC):
    """Base class of every dataset builder (each in its dataset folder, ``datasets/<name>/builder.py``,
    named in ``dataset.yaml`` code.builder; its name is the folder's)."""

    name: ClassVar[str] = DatasetName()  # type: ignore[assignment]  # its dataset folder's name
    #: Version of the builder code. Bump it when the same sources would give other bytes.
    CODE_VERSION: ClassVar[str] = "1.0"

    def __init__(self, spec: DatasetSpec | None = None) -> None:
        self.spec = spec or load_spec(self.name)

    @abstractmethod
    def generate(self, sources: SourceSet, log: BuildLog) -> Rows:
        """Turn resolved sources into rows, ``{config: {split: [row, ...]}}``, in a fixed order."""

    # ------------------------------------------------------------------ pipeline
    def build(
        self,
        *,
        source: str | None = None,
        out_root: str | Path = "dist",
        overwrite: bool = False,
        on_step: StepCallback | None = None,
        images: ImageOptions | None = None,
        image_progress: Callable[[int, int], None] | None = None,
    ) -> BuildResult:
        """Build, validate and atomically publish ``<out_root>/<name>/<version>``.

        Raises :class:`~culturebench.errors.SourceError` for bad input,
        :class:`~culturebench.errors.ValidationFailed` when the built release fails
        validation, :class:`~culturebench.errors.BuildError` otherwise; in every case no
        release folder (and no staging folder) is left behind.
        """
        step = on_step or (lambda _msg: None)
        spec = self.spec
        for folder in [Path(out_root), *Path(out_root).parents]:
            if folder.exists() and not folder.is_dir():
                raise BuildError(f"--out {out_root}: {folder} is a file, not a folder")
        final = release_folder(out_root, spec.name, spec.version)
        from culturebench.outputs import clean_leftovers

        clean_leftovers(final)  # a killed build's staging folder and lock, even on an up-to-date rerun
        _check_replaceable(final, spec.name)
        if final.exists() and not overwrite:
            differs = self._differences(final, source, images)
            if not differs:
                raise UpToDate(final)
            raise BuildError(f"{final} already exists, built from {differs}; use --overwrite to rebuild it")
        from culturebench.outputs import writer_lock

        with writer_lock(final, flag="build"):  # a second build of this release stops here
            return self._build(final, source, overwrite, step, images, image_progress)

    def _differences(self, final: Path, source: str | None, images: ImageOptions | None) -> str:
        """What would make a new build differ from the release at ``final`` (empty: nothing;
        the same sources, builder and libraries give the same bytes)."""
        from culturebench.manifest import read_manifest

        try:
            old = read_manifest(final)
        except CultureBenchError:
            return "an unreadable manifest"
        if images is not None:
            return "a build without this image stage"
        report = final / "build_report.json"
        try:
            stats = json.loads(report.read_text(encoding="utf-8")).get("stats", {})
        except (OSError, ValueError, AttributeError):
            return "an unreadable build_report.json"
        if isinstance(stats.get("images"), dict):  # the image stage's statistics
            return "a build with the image stage"
        sources = resolve_sources(self.spec, source)
        files = (old.get("source") or {}).get("files") or {}
        new = sources.files.values()
        changed = [f.name for f in new if (files.get(f.key) or {}).get("sha256") != f.sha256]
        if changed or set(files) != set(sources.files):
            return f"other sources ({', '.join(changed) or 'other files'} differ)"
        if old.get("builder", {}).get("code_version") != self.CODE_VERSION:
            return "another builder version"
        if old.get("libraries") != library_versions():
            return "other library versions"
        return ""

    def _build(
        self,
        final: Path,
        source: str | None,
        overwrite: bool,
        step: StepCallback,
        images: ImageOptions | None,
        image_progress: Callable[[int, int], None] | None,
    ) -> BuildResult:
        spec = self.spec
        changelog = spec.changelog_entry(spec.version)
        if changelog is None:
            raise BuildError(
                f"{spec.changelog_path}: no entry for version {spec.version}; "
                "add one before building this version"
            )

        kind = declared_kind(changelog)
        if kind is None:
            raise BuildError(
                f"{spec.changelog_path}: the {spec.version} entry must state the change kind "
                "('Kind: major|minor|patch', see docs/versioning.md)"
            )

        step("resolving sources")
        sources = resolve_sources(spec, source)
        log = BuildLog()
        step(f"reading {len(sources.files)} source files")
        rows = self.generate(sources, log)
        self._check_configs(rows, sources)
        if images is not None:
            from culturebench.images.policy import load_policy
            from culturebench.images.stage import run_image_stage, with_sample_images

            if sources.is_sample and images.mirror is None:
                images = with_sample_images(images, Path(sources.origin))
                if images.mirror is not None:
                    step(f"images from the sample's drawn stand-ins ({images.mirror})")
            step("fetching, checking and hashing images")
            log.stats.update(run_image_stage(rows, load_policy(spec), images, log, image_progress))

        with no_room_named(final, kept="nothing was changed there"), staging_dir(final) as tmp:
            step("writing parquet")
            configs_manifest = self._write_data(tmp, rows)
            shutil.copyfile(spec.changelog_path, tmp / "CHANGELOG.md")
            write_text_atomic(tmp / "build_report.json", dumps(log.to_dict()))
            manifest = self._manifest(sources, configs_manifest)
            manifest["release_kind"] = kind
            write_manifest(tmp, manifest)

            step("writing card and croissant")
            from culturebench.cards import write_card_files

            write_card_files(tmp, spec, manifest)

            step("validating")
            from culturebench.validation import validate_release

            report = validate_release(tmp, spec=spec)
            manifest["validation"] = report.summary()
            write_manifest(tmp, manifest)
            if not report.ok:
                raise ValidationFailed(report, f"{spec.name} {spec.version}: validation failed")
            step("publishing release folder")
            _check_replaceable(final, spec.name)
            try:
                publish_dir(tmp, final, overwrite=overwrite)
            except FileExistsError:
                raise BuildError(
                    f"{final} was published by another build while this one ran; nothing was changed "
                    "(use --overwrite to replace it)"
                ) from None
        logger.info("built %s", final)
        return BuildResult(folder=final, manifest=manifest, log=log, report=report)

    # ------------------------------------------------------------------ helpers
    def _check_configs(self, rows: Rows, sources: SourceSet) -> None:
        declared = self.spec.configs
        if set(rows) != set(declared):
            raise BuildError(f"builder produced configs {sorted(rows)}, declared {sorted(declared)}")
        for name, cfg in declared.items():
            got = sum(len(split_rows) for split_rows in rows[name].values())
            if not sources.is_sample and cfg.expected_rows is not None and got != cfg.expected_rows:
                raise BuildError(
                    f"config {name!r}: {got} rows built, {cfg.expected_rows} expected from the "
                    "full upstream (dataset.yaml expected_rows)"
                )

    def _write_data(self, folder: Path, rows: Rows) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, cfg in self.spec.configs.items():
            splits = {}
            for split in cfg.splits:
                split_rows = rows[name].get(split, [])
                table = to_table(split_rows, cfg.features)
                files = write_split(table, folder, name, split)
                splits[split] = {"num_rows": table.num_rows, "num_bytes": table.nbytes, "files": files}
            out[name] = {
                "splits": splits,
                "features_sha256": sha256_text(json.dumps(cfg.features_yaml, sort_keys=True)),
            }
        return out

    def _manifest(self, sources: SourceSet, configs: dict[str, Any]) -> dict[str, Any]:
        spec = self.spec
        return {
            "format": MANIFEST_FORMAT,
            "dataset": spec.name,
            "version": spec.version,
            "schema_version": spec.schema_version,
            "sample": sources.is_sample,
            "builder": {
                "class": f"{type(self).__module__}:{type(self).__name__}",
                "code_version": self.CODE_VERSION,
            },
            "libraries": library_versions(),
            "upstream": spec.upstream,
            "source": sources.to_manifest(),
            "configs": configs,
            "validation": {"status": "pending"},
        }


def get_builder(name: str) -> DatasetBuilder:
    """Instantiate the builder of the registered dataset ``name`` (``dataset.yaml`` code.builder)."""
    from culturebench import registry

    cls = registry.get(name).builder_class()
    return cls(load_spec(name))


class UpToDate(CultureBenchError):
    """The release folder already holds what this build would write."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        super().__init__(f"{folder} is up to date (same sources, builder and libraries); nothing to do")


def _check_replaceable(final: Path, name: str) -> None:
    """``--overwrite`` replaces a release folder of this dataset, nothing else: a file, or a
    folder without a manifest of ``name``, is refused (an empty folder is taken)."""
    if final.is_symlink() or (final.exists() and not final.is_dir()):
        raise BuildError(f"{final} is a file or link, not a release folder; nothing was changed")
    if not final.is_dir() or not any(final.iterdir()):
        return
    from culturebench.manifest import read_manifest

    try:
        manifest = read_manifest(final)
    except (CultureBenchError, OSError, UnicodeDecodeError):  # no or unreadable manifest: not ours
        manifest = {}
    if manifest.get("dataset") != name:
        raise BuildError(
            f"{final} holds files that are not a {name} release; refusing to replace it, even with "
            "--overwrite (move it away or use another --out)"
        )
    extra = sorted(set(_files_in(final)) - _release_files(manifest))
    if extra:  # someone added files to the release folder: replacing it would delete them
        raise BuildError(
            f"{final} holds {len(extra)} file(s) the release did not write ({', '.join(extra[:3])}); "
            "refusing to replace it, even with --overwrite (move them away first)"
        )


def _files_in(folder: Path) -> list[str]:
    return [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink()]


def _release_files(manifest: dict[str, Any]) -> set[str]:
    """Every file a release folder holds by its manifest (card files, data files, the manifest)."""
    files = {"manifest.json", *(manifest.get("files") or {})}
    try:
        for config in (manifest.get("configs") or {}).values():
            for split in config["splits"].values():
                files.update(f["path"] for f in split["files"])
    except (AttributeError, KeyError, TypeError):
        pass  # a damaged manifest: every data file then counts as extra, and the build is refused
    return files
