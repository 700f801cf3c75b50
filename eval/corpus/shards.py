"""Corpus shards: where they are and how to read their text, through fsspec.

A corpus SPEC is one of
- a local file, folder or glob (``data/mc4-ru/*.json.gz``),
- any fsspec URL or glob (``hf://datasets/allenai/c4/multilingual/c4-uk.*.json.gz``, ``s3://...``),
- ``hub:REPO[@REVISION][:GLOB]``: the files of a Hub dataset repo at a revision (its commit
  sha is resolved and recorded), e.g. ``hub:allenai/c4@main:multilingual/c4-uk.tfrecord-000*.json.gz``.

Shards are Parquet (``.parquet``) or JSON Lines (``.jsonl``/``.json``, optionally ``.gz``,
``.bz2``, ``.xz``/``.lzma`` or ``.zst``/``.zstd``). Each has an identity recorded in provenance:
size and a sampled sha256 (size, modification time and 16 blocks; or the
whole file's) for local files, size and ETag (or the Hub's blob id) for remote ones.

Nothing is dropped or miscounted in silence: a shard that is truncated or corrupt (a compressed
stream without its end, a zstd frame cut short), that is not UTF-8, whose text field is not
text, or whose compression is not supported is an error naming the file (and the line or row
reached); a whole shard is counted or none of it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import struct
from collections.abc import Callable, Generator, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.eval.corpus.json_texts import JsonTexts

TEXT_SUFFIXES = (".jsonl", ".json", ".parquet")
COMPRESSION = {
    ".gz": "gzip",
    ".bz2": "bz2",
    ".xz": "xz",
    ".lzma": "xz",
    ".zst": "zstd",
    ".zstd": "zstd",
}
# compressions that a shard name may carry but that are not read: an error, never a skipped file
UNSUPPORTED = (".lz4", ".snappy", ".sz", ".br", ".zip", ".7z", ".lzo", ".tar", ".tgz", ".z")
CHUNK = 1 << 18  # compressed bytes read at a time (zstd)
GZIP_MAGIC = b"\x1f\x8b"
BLOCK = 1 << 20  # decompressed bytes split into lines at a time
READ_AHEAD = 4  # blocks a background thread reads and inflates ahead of the matcher
SAMPLE_BLOCKS, SAMPLE_SIZE = 16, 1 << 16  # what a local shard's fingerprint reads
# the package a protocol's fsspec filesystem needs (the rest: the error fsspec gives)
PROTOCOL_PACKAGES = {
    "http": "aiohttp",
    "https": "aiohttp",
    "s3": "s3fs",
    "s3a": "s3fs",
    "gs": "gcsfs",
    "gcs": "gcsfs",
    "az": "adlfs",
    "abfs": "adlfs",
    "abfss": "adlfs",
    "hf": "huggingface_hub",
    "sftp": "paramiko",
    "ssh": "paramiko",
}


class CorpusError(CultureBenchError):
    """The corpus cannot be listed or a shard cannot be read."""


class TruncatedError(EOFError):
    """A compressed stream ends before its end marker (a cut download or copy)."""


@dataclass(frozen=True)
class CorpusShard:
    """One input file. ``fingerprint`` names its content (sha256 or ETag); ``revision`` the
    Hub commit it was listed at (None elsewhere)."""

    url: str
    size: int
    fingerprint: str
    revision: str | None = None

    @property
    def id(self) -> str:
        """Stable id of this shard's content at this place: the name of its part file."""
        return hashlib.sha256(f"{self.url}\n{self.fingerprint}".encode()).hexdigest()[:20]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _kind(url: str) -> tuple[str, str | None]:
    """(format, compression) from a file name."""
    name = url.rsplit("/", 1)[-1].lower()
    compression = None
    for suffix, codec in COMPRESSION.items():
        if name.endswith(suffix):
            compression, name = codec, name[: -len(suffix)]
            break
    for suffix in TEXT_SUFFIXES:
        if name.endswith(suffix):
            return ("parquet" if suffix == ".parquet" else "jsonl"), compression
    raise CorpusError(
        f"{url}: not a Parquet or JSON Lines shard (.parquet, .jsonl or .json, optionally "
        f"{', '.join(COMPRESSION)})"
    )


def _is_text_shard(name: str) -> bool:
    """Whether a listed file is a shard; a shard in an unsupported compression (``x.jsonl.lz4``)
    is an error rather than a file left out."""
    try:
        _kind(name)
    except CorpusError:
        base = name.rsplit("/", 1)[-1].lower()
        for suffix in UNSUPPORTED:
            if base.endswith(suffix) and base[: -len(suffix)].endswith(TEXT_SUFFIXES):
                raise CorpusError(
                    f"{name}: {suffix} compression is not supported (use {', '.join(COMPRESSION)})"
                ) from None
        return False
    return True


def _backend_missing(spec: str, exc: ImportError, option: str) -> CorpusError:
    """The one-line error for a URL whose fsspec filesystem needs a package not installed."""
    protocol = spec.split("://", 1)[0].lower() if "://" in spec else "file"
    package = PROTOCOL_PACKAGES.get(protocol) or getattr(exc, "name", None)
    detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
    if package:
        return CorpusError(
            f"{option} {spec}: reading {protocol}:// URLs needs the {package} package, which is not "
            f"installed (pip install {package}); {detail}"
        )
    return CorpusError(f"{option} {spec}: cannot read {protocol}:// URLs here: {detail}")


def _first_line(exc: BaseException) -> str:
    name = type(exc).__name__
    if name == "error":  # zlib.error
        name = f"{type(exc).__module__}.error"
    text = (str(exc).strip().splitlines() or [""])[0][:300]
    return f"{name}: {text}" if text else name


def list_shards(
    spec: str, *, fingerprint_local: bool = True, full_hash: bool = False, option: str = "--corpus"
) -> list[CorpusShard]:
    """The shards of a corpus SPEC, sorted by URL (so every engine sees one order). ``option``
    names the command-line option in errors. An empty listing is an error. A local file's
    fingerprint is :func:`sampled_fingerprint` (its sha256 with ``full_hash``; only its
    modification time without ``fingerprint_local``)."""
    if spec.startswith("hub:"):
        return _hub_shards(spec[4:], option)
    path = Path(spec)
    if "://" not in spec and path.is_dir():
        files = sorted(str(p) for p in path.rglob("*") if p.is_file() and _is_text_shard(p.name))
        if not files:
            raise CorpusError(
                f"{option} {spec}: the folder holds no Parquet or JSON Lines shards "
                f"(.parquet, .jsonl, .json, optionally {', '.join(COMPRESSION)})"
            )
        return [_local(Path(f), fingerprint_local, full_hash) for f in files]
    if "://" not in spec:
        import glob

        if any(c in spec for c in "*?["):
            matched = sorted(f for f in glob.glob(spec) if Path(f).is_file())
            files = [f for f in matched if _is_text_shard(f)]
            if matched and not files:
                raise CorpusError(
                    f"{option} {spec}: none of the {len(matched)} matching files is a Parquet or "
                    "JSON Lines shard"
                )
        else:
            files = [spec] if path.is_file() else []
            if files:
                _kind(spec)  # a single file that is not a shard: say so, never count nothing
        if not files:
            raise CorpusError(f"{option} {spec}: no such file, folder or matching files")
        return [_local(Path(f), fingerprint_local, full_hash) for f in files]
    import fsspec

    try:
        fs, _, paths = fsspec.get_fs_token_paths(spec)
    except ImportError as exc:
        raise _backend_missing(spec, exc, option) from None
    except ValueError as exc:  # an unknown protocol
        raise CorpusError(f"{option} {spec}: {_first_line(exc)}") from None
    out = []
    for p in sorted(paths):
        try:
            info = fs.info(p)
        except FileNotFoundError:
            raise CorpusError(f"{option} {spec}: no such file {p}") from None
        except Exception as exc:  # offline, refused, forbidden: one line naming the file
            raise CorpusError(f"{option} {spec}: cannot list {p}: {_first_line(exc)}") from None
        if info.get("type") == "directory":
            continue
        url = fs.unstrip_protocol(p)
        _kind(url)
        tag = str(
            info.get("ETag")
            or info.get("etag")
            or info.get("lfs", {}).get("sha256")
            or info.get("blob_id")
            or ""
        )
        out.append(CorpusShard(url, int(info.get("size") or 0), tag or f"size:{info.get('size')}"))
    if not out:
        raise CorpusError(f"{option} {spec}: no matching files")
    return out


def _local(path: Path, fingerprint: bool, full_hash: bool = False) -> CorpusShard:
    from culturebench.hashing import sha256_file

    stat = path.stat()
    if not fingerprint:
        tag = f"mtime:{stat.st_mtime_ns}"
    elif full_hash:
        tag = sha256_file(path)
    else:
        tag = sampled_fingerprint(path, stat.st_size, stat.st_mtime_ns)
    return CorpusShard(str(path.resolve()), stat.st_size, tag)


def sampled_fingerprint(path: Path, size: int, mtime_ns: int) -> str:
    """``sampled:`` and the sha256 of the size, the modification time and SAMPLE_BLOCKS blocks
    of SAMPLE_SIZE bytes spread over the file (first and last included; the whole file when it
    is smaller): reads ~1 MB however large the shard, where a full sha256 is one more read of
    the whole corpus. Any rewrite changes the time or the size; a change in place that keeps
    both and misses every block would go unseen (``full_hash`` for a sha256 of everything)."""
    digest = hashlib.sha256(f"{size}\n{mtime_ns}\n".encode())
    with open(path, "rb") as handle:
        if size <= SAMPLE_BLOCKS * SAMPLE_SIZE:
            digest.update(handle.read())
        else:
            for i in range(SAMPLE_BLOCKS):
                handle.seek(i * (size - SAMPLE_SIZE) // (SAMPLE_BLOCKS - 1))
                digest.update(handle.read(SAMPLE_SIZE))
    return f"sampled:{digest.hexdigest()}"


def _hub_shards(rest: str, option: str = "--corpus") -> list[CorpusShard]:
    import fnmatch

    from huggingface_hub import HfApi, RepoFile

    from culturebench.hub_http import hub_deadline, timeout_note

    seconds = hub_deadline()
    repo, _, pattern = rest.partition(":")
    repo, _, revision = repo.partition("@")
    try:
        api = HfApi()
        sha = api.dataset_info(repo, revision=revision or "main", timeout=seconds).sha
        tree = api.list_repo_tree(repo, repo_type="dataset", revision=sha, recursive=True)
        listed = [
            f for f in tree if isinstance(f, RepoFile) and (not pattern or fnmatch.fnmatch(f.path, pattern))
        ]
    except Exception as exc:  # offline, no such repo or revision
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise CorpusError(f"{option} hub:{rest}: cannot list the repo: {first}{timeout_note(exc)}") from None
    files = [f for f in listed if _is_text_shard(f.path)]
    if not files:
        raise CorpusError(f"{option} hub:{rest}: no Parquet or JSON Lines files match")
    return sorted(
        (
            CorpusShard(
                f"hf://datasets/{repo}@{sha}/{f.path}",
                int(f.size),
                str(getattr(getattr(f, "lfs", None), "sha256", None) or f.blob_id),
                sha,
            )
            for f in files
        ),
        key=lambda s: s.url,
    )


# ---------------------------------------------------------------------- reading
def _open_raw(url: str):
    """The shard's bytes as stored (no decompression), through fsspec."""
    import fsspec

    try:
        return fsspec.open(url, "rb").open()
    except ImportError as exc:
        raise _backend_missing(url, exc, "shard") from None
    except FileNotFoundError:
        raise CorpusError(f"{url}: no such file (it was listed; was it moved or deleted?)") from None


class _FrameReader(io.RawIOBase):
    """Decompressed bytes of a stream of one or more frames (zstd frames, gzip members) that
    fails at the end of the input when the last frame is not complete: zstandard's own readers
    return what they could decompress and stop, so a cut file would read as a shorter one, and
    ISA-L's gzip reader drops the output of the chunk it was given last. The output of the last
    input chunk is held back until that check passed, so a cut line never reaches the reader,
    while every whole line before the cut does (the error names the line reached)."""

    def __init__(self, raw, codec: str) -> None:
        super().__init__()
        self._chunks = self._decompress(raw, codec)
        self._pending = memoryview(b"")
        self._offset = 0

    @staticmethod
    def _decompress(raw, codec: str) -> Iterator[bytes]:
        new_frame, unit = _frame_decoder(codec)
        frame = None
        data = raw.read(CHUNK)
        if not data:
            raise TruncatedError(f"empty file: no {unit}")
        while data:
            following = raw.read(CHUNK)
            out: list[bytes] = []
            try:
                while data:
                    if frame is None:
                        if codec == "gzip":  # gzip allows zero bytes after a member (padding)
                            data = data.lstrip(b"\x00")
                            if not data:
                                break
                            if not GZIP_MAGIC.startswith(data[:2]):
                                raise ValueError(f"bytes that are not a gzip member: {data[:8]!r}")
                        frame = new_frame()
                    out.append(frame.decompress(data))
                    data = b""
                    if frame.eof:  # this frame is whole; what follows it is the next frame
                        data, frame = frame.unused_data, None
            except Exception:  # damaged: the whole lines before the damage, then the error
                yield _whole_lines(b"".join(out))
                raise
            if not following and frame is not None:  # cut short: the whole lines, then the error
                yield _whole_lines(b"".join(out))
                raise TruncatedError(f"the file ends inside a {unit} (cut short)")
            yield b"".join(out)
            data = following

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while self._offset >= len(self._pending):
            try:
                self._pending, self._offset = memoryview(next(self._chunks)), 0
            except StopIteration:
                return 0
        n = min(len(buffer), len(self._pending) - self._offset)
        buffer[:n] = self._pending[self._offset : self._offset + n]
        self._offset += n
        return n


class _Counted:
    """A binary file that counts the bytes read from it (an empty compressed file is a cut one:
    a valid stream has at least its header and its end)."""

    def __init__(self, raw) -> None:
        self.raw = raw
        self.read_bytes = 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.read_bytes += len(data)
        return data


def _decompressed(raw, compression: str | None):
    """A binary file of the shard's decompressed bytes (``raw`` itself when uncompressed)."""
    if compression is None:
        return raw
    if compression in ("zstd", "gzip"):
        return io.BufferedReader(_FrameReader(raw, compression), buffer_size=CHUNK)
    if compression == "bz2":
        import bz2

        return bz2.BZ2File(raw, mode="rb")
    import lzma

    return lzma.LZMAFile(raw, mode="rb")


def _whole_lines(data: bytes) -> bytes:
    """``data`` up to and with its last newline (a cut line left out)."""
    return data[: data.rfind(b"\n") + 1]


def _frame_decoder(codec: str) -> tuple[Callable[[], Any], str]:
    """A new decoder of one frame of ``codec`` (``.decompress``, ``.eof``, ``.unused_data``),
    and what a frame is called in errors. gzip: ISA-L's inflate (2.7x zlib's, and `gzip -dc`'s,
    on one core; header and CRC checked the same), zlib where isal is not installed."""
    if codec == "zstd":
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj, "zstd frame"
    try:
        from isal import isal_zlib
    except ImportError:  # pragma: no cover - part of the corpus extra
        import zlib

        return functools.partial(zlib.decompressobj, 31), "gzip member"
    return functools.partial(isal_zlib.decompressobj, 31), "gzip member"


def _read_errors() -> tuple[type[BaseException], ...]:
    """What a damaged file raises while it is read (decoders' own error types included)."""
    import lzma
    import zlib

    errors: list[type[BaseException]] = [OSError, EOFError, ValueError, zlib.error, lzma.LZMAError]
    try:
        import zstandard

        errors.append(zstandard.ZstdError)
    except ImportError:  # pragma: no cover - part of the corpus extra
        pass
    try:
        from isal import igzip_lib

        error = igzip_lib.IsalError  # isal_zlib.error is the same class (the stub calls it an instance)
        if isinstance(error, type) and issubclass(error, BaseException):
            errors.append(error)
    except ImportError:  # pragma: no cover - part of the corpus extra
        pass
    try:
        import pyarrow as pa

        errors.append(pa.ArrowException)
    except ImportError:  # pragma: no cover
        pass
    return tuple(errors)


def _not_utf8(url: str, number: int, line: bytes, exc: UnicodeDecodeError) -> CorpusError:
    if number == 1 and line[:2] in (b"\xff\xfe", b"\xfe\xff"):
        what = "UTF-16 text (it starts with a UTF-16 byte-order mark); convert it to UTF-8"
    elif b"\x00" in line:
        what = f"not UTF-8 text (NUL bytes; UTF-16 or a binary file?), byte {exc.start + 1}"
    else:
        what = f"not UTF-8 text (byte 0x{line[exc.start]:02x} at byte {exc.start + 1} of the line)"
    return CorpusError(f"{url}, line {number}: {what}")


def iter_texts(
    shard: CorpusShard, column: str, batch_size: int = 1024, *, literals: bool = False
) -> Iterator[list[str] | JsonTexts]:
    """The ``column`` values of a shard, in batches, in file order (null becomes ""). Any
    damage is a :class:`CorpusError` naming the shard and the line (JSON Lines) or row
    (Parquet) reached; a value that is not text is one too (never a count of its ``str``).
    With ``literals``, a JSON Lines block that qualifies comes as :class:`JsonTexts` (its
    values as the file writes them, decoded on demand), any other batch as ``str``."""
    fmt, compression = _kind(shard.url)
    if fmt == "parquet":
        yield from _parquet_texts(shard, column, batch_size)
    else:
        yield from _jsonl_texts(shard, column, batch_size, compression, literals)


def _is_text_type(kind) -> bool:
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_string_view(kind)
        or pa.types.is_null(kind)
    )


def _parquet_texts(shard: CorpusShard, column: str, batch_size: int) -> Iterator[list[str]]:
    import pyarrow.parquet as pq

    from culturebench.eval.corpus.engine import report

    rows = 0
    try:
        with _open_raw(shard.url) as handle:
            parquet = pq.ParquetFile(handle)
            schema = parquet.schema_arrow
            found = schema.get_all_field_indices(column)
            if not found:
                raise CorpusError(f"{shard.url}: no column {column!r} (has {', '.join(schema.names)})")
            if len(found) > 1:
                raise CorpusError(f"{shard.url}: column {column!r} appears {len(found)} times")
            kind = schema.field(found[0]).type
            if not _is_text_type(kind):
                raise CorpusError(
                    f"{shard.url}: column {column!r} holds {kind}, not text (strings); "
                    "give the text column with --column"
                )
            for batch in parquet.iter_batches(batch_size=batch_size, columns=[column]):
                values = batch.column(0).to_pylist()
                rows += len(values)
                yield [t or "" for t in values]
                report(shard.size * rows // max(parquet.metadata.num_rows, 1))
    except CorpusError:
        raise
    except _read_errors() as exc:
        raise CorpusError(f"{shard.url}: unreadable Parquet after row {rows} ({_first_line(exc)})") from None


def _position(stored, raw) -> int:
    """Stored bytes read so far (for progress); 0 when the stream cannot tell."""
    if isinstance(raw, _Counted):
        return raw.read_bytes
    try:
        return int(stored.tell())
    except (OSError, ValueError, AttributeError):
        return 0


def _jsonl_texts(
    shard: CorpusShard, column: str, batch_size: int, compression: str | None, literals: bool
) -> Iterator[list[str] | JsonTexts]:
    from culturebench.eval.corpus.engine import report

    number = 0
    try:
        with _open_raw(shard.url) as stored:
            raw = _Counted(stored) if compression else stored
            with _decompressed(raw, compression) as handle:
                batch: list[str] = []
                before = 0  # stored bytes read before this block, and after it (for progress)
                fast = _block_decoder(column)
                literal = _block_decoder(column, literals=True) if literals else None
                blocks = (
                    (block, _position(stored, raw), literal is not None and _is_utf8(block))
                    for block in _line_blocks(handle)
                )
                with contextlib.closing(_read_ahead(blocks)) as ahead:
                    for block, after, utf8 in ahead:
                        first = not number and block.startswith(b"\xef\xbb\xbf")  # a BOM: line by line
                        pieces = _literal_block(literal, block, batch_size) if utf8 and not first else None
                        if pieces is not None:  # scanned as the file has them: no str made
                            if batch:
                                yield batch
                                batch = []
                            for index, texts in enumerate(pieces):
                                yield texts
                                report(before + (after - before) * (index + 1) // len(pieces))
                        else:
                            values = _decode_block(fast, block) if fast is not None and not first else None
                            if values is None:  # the line-by-line reader names the line of any error
                                values = _values_by_line(shard.url, column, block, number)
                            for index, value in enumerate(values):
                                batch.append(value)
                                if len(batch) >= batch_size:
                                    yield batch
                                    batch = []
                                    report(before + (after - before) * (index + 1) // len(values))
                        number += block.count(b"\n") + 1
                        before = after
                if batch:
                    yield batch
            if compression and not raw.read_bytes:
                raise TruncatedError(f"empty file: no {compression} data")
    except CorpusError:
        raise
    except _read_errors() as exc:
        codec = f"{compression} data" if compression else "file"
        where = f"after line {number}" if number else "before the first line"
        if isinstance(exc, EOFError):
            problem = f"truncated {codec} (it ends {where}: {_first_line(exc)})"
        else:
            problem = f"corrupt or unreadable {codec} {where} ({_first_line(exc)})"
        raise CorpusError(f"{shard.url}: {problem}") from None


def _values_by_line(url: str, column: str, block: bytes, number: int) -> list[str]:
    """The ``column`` values of a block read one line at a time (``number``: the lines before
    it), blank lines skipped; the first line that is not a record with a string or null there
    is an error naming it (a BOM before the file's first line is dropped)."""
    values: list[str] = []
    for line in block.split(b"\n"):
        number += 1
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _not_utf8(url, number, line, exc) from None
        if number == 1 and text.startswith("\ufeff"):
            text = text[1:]  # a UTF-8 byte-order mark
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{url}, line {number}: not JSON ({exc.msg})") from None
        if not isinstance(record, dict) or column not in record:
            raise CorpusError(f"{url}, line {number}: no field {column!r}")
        value = record[column]
        if value is None:
            value = ""
        elif not isinstance(value, str):
            raise CorpusError(
                f"{url}, line {number}: field {column!r} is a JSON {_json_type(value)}, not a string"
            )
        values.append(value)
    return values


@functools.lru_cache(maxsize=8)
def _block_decoder(column: str, literals: bool = False) -> Any:
    """A msgspec decoder of JSON Lines records with a string-or-null ``column`` (other fields
    skipped unparsed), or with ``literals`` one that keeps the value's JSON as it stands
    (``msgspec.Raw``); None without msgspec (the ``corpus`` extra)."""
    try:
        import msgspec
    except ImportError:
        return None
    kind = msgspec.Raw if literals else str | None
    record = msgspec.defstruct("Record", [("value", kind)], rename={"value": column})
    return msgspec.json.Decoder(record)


def _decoded_values(decoder: Any, block: bytes) -> list[Any] | None:
    """The ``column`` values of a block of whole lines as ``decoder`` gives them (blank lines
    skipped, as the line-by-line reader skips them), or None when any line is not a plain record
    with a value of the decoder's type there (not JSON, not UTF-8, no such field, another type, a
    lone surrogate escape): the line-by-line reader then reads the block and names the line."""
    import msgspec

    try:
        return [record.value for record in decoder.decode_lines(block)]
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError):  # UnicodeDecodeError too
        return None


def _decode_block(decoder: Any, block: bytes) -> list[str] | None:
    """The block's values as text (null as ""), or None as :func:`_decoded_values`."""
    values = _decoded_values(decoder, block)
    return None if values is None else [value or "" for value in values]


def _literal_block(decoder: Any, block: bytes, batch_size: int) -> list[JsonTexts] | None:
    """The block's values as :class:`JsonTexts` of up to ``batch_size`` documents (``block``
    is UTF-8), or None when a line is not a record with the field, or a value does not qualify:
    then the block is decoded to text."""
    values = _decoded_values(decoder, block)
    if values is None:
        return None
    pieces = [JsonTexts.of(values[i : i + batch_size]) for i in range(0, len(values), batch_size)]
    return None if None in pieces else pieces  # type: ignore[return-value]


def _is_utf8(block: bytes) -> bool:
    """Whether ``block`` is UTF-8 (Arrow's check: run in the read-ahead thread, it does not
    hold the GIL)."""
    import pyarrow as pa

    offsets = pa.py_buffer(struct.pack("<2q", 0, len(block)))
    try:
        pa.LargeStringArray.from_buffers(1, offsets, pa.py_buffer(block)).validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _line_blocks(handle) -> Iterator[bytes]:
    """The decompressed bytes in blocks of whole lines (without the last line's newline): one
    split per block instead of a read per line. ``read1`` gives what one decompression step
    made, so the lines before a damaged part are still read (and the error names the line)."""
    read = getattr(handle, "read1", None) or handle.read
    held: list[bytes] = []
    while True:
        data = read(BLOCK)
        if not data:
            tail = b"".join(held)
            if tail:  # a last line without its newline
                yield tail
            return
        cut = data.rfind(b"\n")
        if cut == -1:
            held.append(data)
            continue
        held.append(data[:cut])
        yield b"".join(held)
        held = [data[cut + 1 :]]


def _read_ahead(items: Iterator[Any], depth: int | None = None) -> Generator[Any, None, None]:
    """``items``, made by a background thread up to ``depth`` ahead of the caller: the next
    blocks are read and inflated while the caller matches the one before (ISA-L and zstandard
    release the GIL while they inflate). An error raised while making them is raised here, after
    the items made before it, as if read in this thread. Closing the iterator (the caller is
    done, failed or was interrupted) stops the thread; one blocked in a read is left to end with
    the file it reads (a daemon thread). ``depth`` defaults to :data:`READ_AHEAD`; 0 reads in
    the caller's thread."""
    import queue
    import threading

    depth = READ_AHEAD if depth is None else depth
    if depth <= 0:
        yield from items
        return

    made: queue.Queue = queue.Queue(depth)
    stop = threading.Event()
    end = object()

    def offer(entry: tuple[Any, BaseException | None]) -> bool:
        while not stop.is_set():
            try:
                made.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not offer((item, None)):
                    return
        except BaseException as exc:  # raised again in the caller's thread
            offer((end, exc))
            return
        offer((end, None))

    thread = threading.Thread(target=produce, name="culturebench-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item, exc = made.get()
            if item is end:
                if exc is not None:
                    raise exc
                return
            yield item
    finally:
        stop.set()
        thread.join(timeout=5)


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "array" if isinstance(value, list) else "object"
