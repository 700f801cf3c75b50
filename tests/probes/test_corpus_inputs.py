"""Probe cases of ``culturebench corpus``: input that used to be dropped or miscounted in
silence (a cut ``.zst`` shard counted as 0 documents), or that ended in the generic
"unexpected" line. Each must be one error line naming the file (and the line or row reached)
with exit code 2, and nothing written as if the count had succeeded."""

from __future__ import annotations

import bz2
import gzip
import io
import itertools
import json
import lzma
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.probes.test_cli_first_contact import cli

# the corpus engine: Aho-Corasick, zstd, Dask
pytestmark = [pytest.mark.integration, pytest.mark.extra("corpus")]

REPO = Path(__file__).resolve().parents[2]


DOCS = [
    "Борщ — українська страва. В Україні борщ варять щодня.",
    "Найкращий борщ їв у Польщі, а пельмені у Росії.",
    "Вареники з вишнями. Варениками частували гостей.",
]


def _lines(n: int = 3000) -> bytes:
    """JSON Lines of ``n`` documents (several compressed chunks' worth once cut)."""
    return "".join(
        json.dumps({"text": f"{DOCS[i % 3]} {i}", "id": i}, ensure_ascii=False) + "\n" for i in range(n)
    ).encode("utf-8")


def _zstd(data: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor().compress(data)


COMPRESSORS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress, "zst": _zstd}


def _one_error(code: int, output: str, *needles: str) -> str:
    """Exit 2 with exactly one error line holding every needle; no traceback, no catch-all."""
    assert code == 2, output
    assert "Traceback" not in output and "unexpected" not in output, output
    # (the helper gives stderr twice: in the output and on its own)
    errors = sorted({line for line in output.splitlines() if line.startswith(("error:", "bad input:"))})
    assert len(errors) == 1, output
    for needle in needles:
        assert needle in errors[0], output
    return errors[0]


def _count(release, corpus: Path | str, out: Path, *extra: str) -> tuple[int, str]:
    return cli(
        "corpus", "count", "borsch", "--corpus", str(corpus), "--lang", "uk",
        "--local", str(release.folder), "--out", str(out), *extra,
    )  # fmt: skip


# ---------------------------------------------------------------------- cut and corrupt shards
@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_a_truncated_compressed_shard_is_an_error_naming_it(
    borsch_release, tmp_path: Path, suffix: str
) -> None:
    codec = {"gz": "gzip", "zst": "zstd"}.get(suffix, suffix)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    whole = COMPRESSORS[suffix](_lines())
    (corpus / f"a.jsonl.{suffix}").write_bytes(whole)  # a good shard beside the cut one
    (corpus / f"b.jsonl.{suffix}").write_bytes(whole[: len(whole) * 2 // 3])
    out = tmp_path / "out"
    line = _one_error(*_count(borsch_release, corpus, out), f"b.jsonl.{suffix}", f"truncated {codec} data")
    if suffix in ("gz", "zst"):  # streams that give their data as it comes: the line reached
        reached = int(line.split("after line ")[1].split(":")[0])
        assert 0 < reached < 3000
    else:  # bz2 (one 900 kB block) and xz give nothing of a cut block
        assert "it ends" in line
    assert not (out / "count.json").exists()


def test_a_zst_cut_by_one_byte_is_not_a_shorter_shard(borsch_release, tmp_path: Path) -> None:
    """The probe: zstandard's streaming reader returned the decompressed part of a cut frame
    and stopped, so the shard counted as fewer (or 0) documents with exit 0."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "c.jsonl.zst").write_bytes(_zstd(_lines(50))[:-1])
    _one_error(*_count(borsch_release, corpus, tmp_path / "out"), "c.jsonl.zst", "truncated zstd data")


def test_a_gzip_shard_cut_before_its_end_marker_is_one_line(borsch_release, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "c.jsonl.gz").write_bytes(gzip.compress(_lines(50))[:-8])  # the trailer cut off
    line = _one_error(*_count(borsch_release, corpus, tmp_path / "out"), "c.jsonl.gz", "truncated gzip")
    assert "ends inside a gzip member (cut short)" in line


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("empty.jsonl.gz", b"", "truncated gzip data"),
        ("empty.jsonl.zst", b"", "truncated zstd data"),
        ("garbage.jsonl.zst", b"these bytes are no zstd frame", "corrupt or unreadable zstd data"),
        ("garbage.jsonl.gz", b"these bytes are no gzip stream", "corrupt or unreadable gzip data"),
    ],
)
def test_empty_or_garbage_compressed_shards_are_errors(
    borsch_release, tmp_path: Path, name: str, content: bytes, needle: str
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / name).write_bytes(content)
    _one_error(*_count(borsch_release, corpus, tmp_path / "out"), name, needle)


def test_a_corrupt_gzip_stream_names_the_line_reached(borsch_release, tmp_path: Path) -> None:
    data = bytearray(gzip.compress(_lines(), compresslevel=1))
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(64)  # a run of zeros in the deflate data
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "c.jsonl.gz").write_bytes(bytes(data))
    _one_error(*_count(borsch_release, corpus, tmp_path / "out"), "c.jsonl.gz", "gzip")


def test_an_unsupported_compression_is_an_error_not_a_skipped_file(borsch_release, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.jsonl.gz").write_bytes(gzip.compress(_lines(10)))
    (corpus / "b.jsonl.lz4").write_bytes(b"\x04\x22\x4d\x18")
    _one_error(*_count(borsch_release, corpus, tmp_path / "out"), "b.jsonl.lz4", "not supported")


def test_a_corpus_of_no_shards_is_an_error_not_zero_documents(borsch_release, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "notes.txt").write_text("not a shard\n", encoding="utf-8")
    _one_error(*_count(borsch_release, corpus, tmp_path / "o1"), "no Parquet or JSON Lines shards")
    _one_error(*_count(borsch_release, f"{corpus}/*.txt", tmp_path / "o2"), "none of the 1 matching files")
    _one_error(*_count(borsch_release, corpus / "notes.txt", tmp_path / "o3"), "notes.txt", "not a Parquet")


# ---------------------------------------------------------------------- the text column
def test_a_parquet_text_column_of_integers_names_file_column_and_type(borsch_release, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pq.write_table(pa.table({"text": [1, 2, 3]}), corpus / "numbers.parquet")
    _one_error(
        *_count(borsch_release, corpus, tmp_path / "out"), "numbers.parquet", "'text'", "int64", "not text"
    )


def test_a_json_number_in_the_text_field_is_not_counted_as_its_digits(borsch_release, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "c.jsonl").write_text('{"text": "Борщ"}\n{"text": 12}\n', encoding="utf-8")
    _one_error(
        *_count(borsch_release, corpus, tmp_path / "out"), "c.jsonl, line 2", "field 'text' is a JSON number"
    )


# ---------------------------------------------------------------------- not UTF-8
def test_a_utf16_jsonl_shard_names_file_and_line(borsch_release, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "c.jsonl").write_bytes('{"text": "Борщ"}\n'.encode("utf-16"))
    _one_error(*_count(borsch_release, corpus, tmp_path / "out"), "c.jsonl, line 1", "UTF-16")


def test_binary_bytes_in_a_compressed_jsonl_shard_name_file_and_line(borsch_release, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    data = '{"text": "Борщ"}\n{"text": "ok"}\n'.encode() + b"\x89PNG\r\n\x1a\n\xff\xd8\xff\n"
    (corpus / "c.jsonl.zst").write_bytes(_zstd(data))
    _one_error(*_count(borsch_release, corpus, tmp_path / "out"), "c.jsonl.zst, line 3", "not UTF-8")


def test_a_utf16_annotation_list_names_file_and_line(tmp_path: Path) -> None:
    sheet = tmp_path / "fig7.csv"
    sheet.write_bytes("language,category\nuk,Word Polysemy\n".encode("utf-16"))
    _one_error(*cli("corpus", "annotations", str(sheet)), "fig7.csv, line 1", "UTF-16")
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"language,category\nuk,Misc.\n\x89PNG\xff\n")
    _one_error(*cli("corpus", "annotations", str(binary)), "binary.csv, line 3", "not UTF-8")
    nul = tmp_path / "nul.csv"
    nul.write_bytes(b"language,category\nuk,Misc.\x00\n")
    _one_error(*cli("corpus", "annotations", str(nul)), "nul.csv, line 2", "NUL byte")


@pytest.mark.e2e
def test_reference_shards_of_the_wrong_kind_name_the_file(borsch_image_release, tmp_path: Path) -> None:
    """Reference pHash lists: a number column would be read as hex digits (silently wrong), a
    JSON Lines list used to be left out in silence, a non-hex value ended in the catch-all."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    args = ("--local", str(borsch_image_release.folder))
    numbers = tmp_path / "numbers"
    numbers.mkdir()
    pq.write_table(pa.table({"phash": [12345, 678], "source": ["a", "b"]}), numbers / "r.parquet")
    _one_error(
        *cli("corpus", "contamination", "borsch", "--references", str(numbers), "--out",
             str(tmp_path / "o1"), *args),
        "r.parquet", "'phash'", "int64",
    )  # fmt: skip
    jsonl = tmp_path / "jsonl"
    jsonl.mkdir()
    pq.write_table(pa.table({"phash": ["00ff00ff00ff00ff"], "source": ["a"]}), jsonl / "a.parquet")
    (jsonl / "b.jsonl").write_text('{"phash": "00ff00ff00ff00ff", "source": "b"}\n', encoding="utf-8")
    _one_error(
        *cli("corpus", "contamination", "borsch", "--references", str(jsonl), "--out",
             str(tmp_path / "o2"), *args),
        "b.jsonl", "is not Parquet",
    )  # fmt: skip
    bad = tmp_path / "bad"
    bad.mkdir()
    pq.write_table(pa.table({"phash": ["not hex at all!!", None], "source": ["a", "b"]}), bad / "x.parquet")
    _one_error(
        *cli("corpus", "contamination", "borsch", "--references", str(bad), "--out",
             str(tmp_path / "o3"), *args),
        "x.parquet", "not hex",
    )  # fmt: skip


# ---------------------------------------------------------------------- the Dask scheduler
@pytest.mark.parametrize(
    "address", ["127.0.0.1", "tcp://127.0.0.1", "127.0.0.1:port", "127.0.0.1:99999", "http://h:8786", ""]
)
def test_a_scheduler_address_without_a_port_is_a_usage_error(tmp_path: Path, address: str) -> None:
    """Checked before anything is read (the release folder need not exist for this)."""
    nowhere = str(tmp_path / "no-release")
    for command in (
        ["corpus", "count", "borsch", "--corpus", str(tmp_path), "--lang", "uk", "--local", nowhere],
        ["corpus", "contamination", "borsch", "--references", str(tmp_path), "--local", nowhere],
    ):
        code, output = cli(*command, "--out", str(tmp_path / "out"), "--scheduler", address)
        _one_error(code, output, "--scheduler", "HOST:PORT", "tcp://HOST:PORT")


def test_scheduler_addresses_that_are_accepted() -> None:
    from culturebench.eval.corpus.engine import check_scheduler

    for address in ("127.0.0.1:8786", "tcp://scheduler:8786", "tls://10.0.0.1:8786", "[::1]:8786"):
        assert check_scheduler(address) == address


# ---------------------------------------------------------------------- a URL without its backend
def test_an_http_corpus_without_aiohttp_names_what_to_install(borsch_release, tmp_path: Path) -> None:
    """Through the console entry point (its catch-all included), with aiohttp made impossible
    to import; the import fails before any connection, and the address is 127.0.0.1 anyway."""
    script = (
        "import sys; sys.modules['aiohttp'] = None\n"
        "from culturebench.cli import main\n"
        "sys.argv = ['culturebench', *sys.argv[1:]]\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, "corpus", "count", "borsch",
         "--corpus", "http://127.0.0.1:9/corpus/a.jsonl.gz", "--lang", "uk",
         "--local", str(borsch_release.folder), "--out", str(tmp_path / "out")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_PROXY": "*", "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    _one_error(
        proc.returncode, proc.stdout + proc.stderr, "--corpus http://127.0.0.1:9/corpus/a.jsonl.gz",
        "aiohttp", "pip install aiohttp",
    )  # fmt: skip


# ---------------------------------------------------------------------- numeric options
@pytest.mark.parametrize(
    ("command", "option", "value"),
    [
        ("count", "--workers", "0"),
        ("count", "--workers", "-3"),
        ("count", "--per-dish", "0"),
        ("count", "--workers", "two"),
        ("contamination", "--workers", "0"),
        ("contamination", "--threshold", "-1"),
        ("contamination", "--threshold", "33"),
        ("sample", "--n", "0"),
        ("code-mixing", "--bins", "1"),
        ("code-mixing", "--bins", "1000000000"),
        ("cooccurrence", "--bins", "0"),
    ],
)
def test_numeric_options_out_of_range_are_refused_by_the_parser(
    tmp_path: Path, command: str, option: str, value: str
) -> None:
    given = {
        "count": ["borsch", "--corpus", str(tmp_path), "--lang", "uk", "--out", str(tmp_path / "o")],
        "contamination": ["borsch", "--references", str(tmp_path), "--out", str(tmp_path / "o")],
        "sample": [str(tmp_path), "--out", str(tmp_path / "s.csv")],
        "code-mixing": [str(tmp_path)],
        "cooccurrence": [str(tmp_path), "--qa", str(tmp_path)],
    }[command]
    code, output = cli("corpus", command, *given, option, value)
    assert code == 2, output
    assert "Invalid value for" in output and option in output, output
    assert "Traceback" not in output and "unexpected" not in output, output


# ---------------------------------------------------------------------- progress
def _two_shard_corpus(folder: Path, n: int = 3000) -> Path:
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(_lines(n))
    (folder / "b.jsonl.zst").write_bytes(_zstd(_lines(n)))
    return folder


@pytest.mark.parametrize("workers", [1, 2])
def test_progress_counts_bytes_of_the_shards_to_the_end(borsch_release, tmp_path: Path, workers: int) -> None:
    """Bytes of the shards as stored, within a shard too on one process (batch by batch); it
    never goes back and ends at the total."""
    from culturebench.eval.corpus.job import corpus_count

    corpus = _two_shard_corpus(tmp_path / "corpus")
    seen: list[tuple[int, int]] = []
    record = corpus_count(
        "borsch", str(corpus), tmp_path / "out", lang="uk", local=str(borsch_release.folder),
        workers=workers, progress=lambda done, total: seen.append((done, total)),
    )  # fmt: skip
    total = sum(s["size"] for s in record["shards"])
    assert record["documents"] == 6000
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen))
    if workers == 1:  # 3000 documents a shard, batches of 1024: updates inside each shard
        assert len({done for done, _ in seen}) > 4


def test_a_count_on_a_terminal_shows_size_rate_and_eta(borsch_release, tmp_path: Path, monkeypatch) -> None:
    from rich.console import Console

    from culturebench.cli import progress as cli_support

    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=200, color_system=None)
    monkeypatch.setattr(cli_support, "err_console", terminal)
    corpus = _two_shard_corpus(tmp_path / "corpus")
    code, output = _count(borsch_release, corpus, tmp_path / "out")
    assert code == 0, output
    shown = screen.getvalue()
    assert "(kB)" in shown  # the unit of the count and of the rate
    assert "/s" in shown and "ETA" in shown, shown  # progress_bar()'s rate and time left


def test_a_count_off_a_terminal_prints_plain_lines(borsch_release, tmp_path: Path) -> None:
    corpus = _two_shard_corpus(tmp_path / "corpus", n=50)
    code, output = _count(borsch_release, corpus, tmp_path / "out")
    assert code == 0, output
    assert "\x1b[" not in output, output  # progress as plain lines, never terminal redraws
    assert "2 shards, 100 documents" in output, output


def _texts(path: Path) -> list[str]:
    from culturebench.eval.corpus.shards import iter_texts as texts_of
    from culturebench.eval.corpus.shards import list_shards

    (shard,) = list_shards(str(path))
    return [t for batch in texts_of(shard, "text") for t in batch]


def test_gzip_members_padding_and_trailing_garbage(tmp_path: Path) -> None:
    """gzip shards are read by ISA-L's inflate one member at a time: several members (``cat
    a.gz b.gz``) are one shard of all their lines, zero padding after a member is allowed (as
    gzip(1) allows it), anything else after a member is a corrupt shard, not a shorter one."""
    from culturebench.eval.corpus.shards import CorpusError

    data = _lines(4000)
    expected = [json.loads(line)["text"] for line in data.splitlines()]
    half = data.index(b"\n", len(data) // 2) + 1
    members = tmp_path / "members.jsonl.gz"
    members.write_bytes(gzip.compress(data[:half]) + gzip.compress(data[half:], compresslevel=1))
    assert _texts(members) == expected
    padded = tmp_path / "padded.jsonl.gz"
    padded.write_bytes(gzip.compress(data) + bytes(1000))
    assert _texts(padded) == expected
    garbage = tmp_path / "garbage.jsonl.gz"
    garbage.write_bytes(gzip.compress(data) + b"not gzip")
    with pytest.raises(CorpusError, match=r"garbage\.jsonl\.gz: corrupt or unreadable gzip data after line"):
        _texts(garbage)
