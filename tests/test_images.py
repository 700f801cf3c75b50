"""The image stage end to end (BORSCH sample with a local image server and a Commons API
replay), safe decoding, licences, the hash index against brute force, image validation."""

from __future__ import annotations

import hashlib
import io
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from culturebench.builders import get_builder
from culturebench.errors import ValidationFailed
from culturebench.images.decode import ImageError, safe_decode
from culturebench.images.fetch import ImageCache
from culturebench.images.index import HashIndex, brute_force
from culturebench.images.licenses import allowed, commons_title, to_spdx
from culturebench.images.stage import ImageOptions

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parent.parent


def png(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format="PNG")
    return buf.getvalue()


def noise(seed: int, size: int = 48) -> bytes:
    rng = np.random.default_rng(seed)
    return png(rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8))


def bomb() -> bytes:
    buf = io.BytesIO()
    Image.new("L", (12000, 12000), 0).save(buf, format="PNG")
    return buf.getvalue()


# ---------------------------------------------------------------------------- units
def test_safe_decode_refuses_bad_bytes() -> None:
    good = noise(1)
    assert safe_decode(good).width == 48
    with pytest.raises(ImageError) as truncated:
        safe_decode(good[: len(good) // 2])
    assert truncated.value.reason == "truncated"
    with pytest.raises(ImageError) as text:
        safe_decode(b"<html>not an image</html>")
    assert text.value.reason == "not_an_image"
    with pytest.raises(ImageError) as big:
        safe_decode(bomb(), max_pixels=40_000_000)
    assert big.value.reason == "too_many_pixels"
    with pytest.raises(ImageError) as heavy:
        safe_decode(good, max_bytes=100)
    assert heavy.value.reason == "too_large"


def test_exif_orientation_is_applied() -> None:
    img = Image.new("RGB", (40, 20), (255, 0, 0))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise on display
    buf = io.BytesIO()
    img.save(buf, format="JPEG", exif=exif)
    decoded = safe_decode(buf.getvalue())
    assert (decoded.width, decoded.height) == (20, 40)


def test_licence_mapping_and_titles() -> None:
    assert to_spdx("CC BY-SA 4.0") == "CC-BY-SA-4.0" and to_spdx("CC0") == "CC0-1.0"
    assert to_spdx(None) == "unknown" and to_spdx("Public domain") == "LicenseRef-PublicDomain"
    policy = ["CC0-1.0", "CC-BY-[0-9]*", "CC-BY-SA-[0-9]*"]
    assert allowed("CC-BY-SA-4.0", policy) and allowed("CC-BY-2.0", policy) and allowed("CC0-1.0", policy)
    assert not allowed("CC-BY-NC-4.0", policy) and not allowed("CC-BY-NC-SA-3.0", policy)
    assert not allowed("unknown", policy)
    assert (
        commons_title("https://upload.wikimedia.org/wikipedia/commons/thumb/a/ab/Plov_1.jpg/320px-Plov_1.jpg")
        == "File:Plov 1.jpg"
    )
    assert commons_title("https://example.org/a.jpg") is None


@pytest.mark.parametrize(
    ("n", "threshold", "chunks"), [(5000, 6, 4), (20000, 4, 4), (5000, 8, 8), (3000, 10, 4)]
)
def test_hash_index_recall_equals_brute_force(n: int, threshold: int, chunks: int) -> None:
    rng = np.random.default_rng(n + threshold)
    hashes = rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True)
    near = hashes[:200].copy()
    for k in range(200):  # plant neighbours at every distance up to threshold + 2
        bits = rng.choice(64, size=k % (threshold + 3), replace=False)
        for b in bits:
            near[k] ^= np.uint64(1 << int(b))
    queries = np.concatenate([near, rng.integers(0, 2**64 - 1, size=100, dtype=np.uint64, endpoint=True)])
    index = HashIndex(hashes, threshold, chunks=chunks)
    qi, ii = index.query_many(queries)
    for k, q in enumerate(queries):
        expected = brute_force(hashes, int(q), threshold)
        assert np.array_equal(np.sort(ii[qi == k]), expected)
        assert np.array_equal(index.query(int(q)), expected)


# ---------------------------------------------------------------------------- end to end
@pytest.fixture
def image_world(tmp_path: Path, servers, image_source):
    """A BORSCH sample source whose image manifest points at real bytes on a local server."""
    from skimage import data as skdata

    astronaut = skdata.astronaut()
    special = {
        0: "astronaut",
        1: "astronaut_small",
        2: "wrong_checksum",
        3: "truncated",
        4: "bomb",
        5: "not_image",
    }

    def image_bytes(k: int, row: dict) -> tuple[bytes, bytes]:
        kind = special.get(k, "noise")
        if kind == "astronaut":
            data = png(astronaut)
        elif kind == "astronaut_small":
            data = png(np.asarray(Image.fromarray(astronaut).resize((256, 256))))
        elif kind == "truncated":
            full = noise(k)
            data = full[: len(full) // 2]
        elif kind == "bomb":
            data = bomb()
        elif kind == "not_image":
            data = b"this is not an image"
        else:
            data = noise(k)
        return data, noise(10_000 + k) if kind == "wrong_checksum" else data

    def licensed(k: int) -> bool:  # half are on Commons
        return k % 2 == 0 and special.get(k, "noise") in ("noise", "astronaut", "astronaut_small")

    source, served, titles, rows = image_source(tmp_path, image_bytes, licensed)
    titles["File:Borsch test 1.png"] = {
        "sha1": hashlib.sha1(png(np.asarray(Image.fromarray(astronaut).resize((256, 256))))).hexdigest(),
        "license": "CC0",
        "license_url": "",
        "artist": "Author 1",
    }
    with servers.serve_folder(served) as mirror, servers.commons_replay(titles) as (api, seen):
        yield {
            "source": source,
            "mirror": mirror,
            "api": api,
            "seen": seen,
            "rows": rows,
            "titles": titles,
            "cache": ImageCache(tmp_path / "cache"),
            "tmp": tmp_path,
        }


def _images(result) -> dict[str, dict]:
    import pyarrow.parquet as pq

    out = {}
    for config in ("ru", "uk"):
        for f in result.manifest["configs"][config]["splits"]["test"]["files"]:
            for row in pq.read_table(result.folder / f["path"]).to_pylist():
                for record in row["images"]:
                    out[record["upstream_path"]] = record
    return out


@pytest.mark.integration
def test_build_embeds_licensed_images_with_hash_checks(image_world) -> None:
    w = image_world
    options = ImageOptions(mirror=w["mirror"], commons_api=w["api"], allow=("127.0.0.1",), cache=w["cache"])
    result = get_builder("borsch").build(source=str(w["source"]), out_root=w["tmp"] / "dist", images=options)
    records = _images(result)
    by_path = {row["path"]: row for row in w["rows"]}
    paths = [row["path"] for row in w["rows"]]
    status = {p: records[p]["status"] for p in paths}
    assert status[paths[2]] == "failed:checksum_mismatch"
    assert status[paths[3]] == "failed:truncated"
    assert status[paths[4]] == "failed:too_many_pixels"
    assert status[paths[5]] == "failed:not_an_image"
    embedded = [p for p in paths if status[p] == "embedded"]
    assert embedded and all(records[p]["license"] in ("CC-BY-SA-4.0", "CC0-1.0") for p in embedded)
    first = records[paths[0]]
    assert first["author"] == "Author 0" and first["source_page"].startswith(
        "https://commons.wikimedia.org/wiki/File:"
    )
    assert first["image"]["bytes"] and first["width"] == 512 and len(first["phash"]) == 16 and first["dhash"]
    url_only = [p for p in paths if status[p] == "url_only"]
    assert url_only and all(
        records[p]["license"] == "unknown" and records[p]["image"] is None for p in url_only
    )
    assert all(records[p]["sha256"] == by_path[p]["sha256"] for p in embedded)
    checks = result.report.checks_run
    assert {
        "images:integrity",
        "images:licence_policy",
        "images:near_duplicates",
        "images:contamination",
    } <= set(checks)
    near = [f for f in result.report.findings if f.check == "images:near_duplicates"]
    assert len(near) == 1 and "pHash distance" in near[0].message  # the astronaut and its resized copy
    card = (result.folder / "README.md").read_text(encoding="utf-8")
    assert "## Image attributions" in card and "Author 0" in card and "CC-BY-SA-4.0" in card
    assert result.log.stats["images"]["per_status"]["embedded"] == len(embedded)


@pytest.mark.integration
def test_embedded_images_load_as_pil_and_offline_rebuild_uses_the_cache(image_world, tmp_path: Path) -> None:
    from datasets import load_dataset

    w = image_world
    options = ImageOptions(mirror=w["mirror"], commons_api=w["api"], allow=("127.0.0.1",), cache=w["cache"])
    first = get_builder("borsch").build(source=str(w["source"]), out_root=w["tmp"] / "d1", images=options)
    ds = load_dataset(str(first.folder), "ru", split="test", cache_dir=str(tmp_path / "hf"))
    pictures = [img["image"] for row in ds for img in row["images"] if img["image"] is not None]
    assert pictures and all(isinstance(p, Image.Image) for p in pictures)
    offline = ImageOptions(offline=True, cache=w["cache"], commons_api=w["api"], allow=("127.0.0.1",))
    again = get_builder("borsch").build(source=str(w["source"]), out_root=w["tmp"] / "d2", images=offline)
    a, b = _images(first), _images(again)
    assert {p: r["status"] for p, r in a.items() if r["status"] == "embedded"} == {
        p: r["status"] for p, r in b.items() if r["status"] == "embedded"
    }


@pytest.mark.integration
def test_contamination_fails_the_gate_unless_waived(image_world, tmp_path: Path, monkeypatch) -> None:
    import pandas as pd
    import yaml

    from culturebench.images.phash import perceptual_hashes

    w = image_world
    datasets = tmp_path / "datasets"
    shutil.copytree(REPO / "datasets", datasets)
    monkeypatch.setenv("CULTUREBENCH_DATASETS", str(datasets))
    # A "known web image": a JPEG re-encode of the embedded astronaut.
    buf = io.BytesIO()
    from skimage import data as skdata

    Image.fromarray(skdata.astronaut()).save(buf, format="JPEG", quality=60)
    web_hash = perceptual_hashes(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))["phash"]
    pd.DataFrame({"phash": [web_hash], "source": ["https://example.org/astronaut.jpg"]}).to_parquet(
        datasets / "borsch" / "web_images.parquet"
    )
    policy_path = datasets / "borsch" / "image_policy.yaml"
    policy = yaml.safe_load(policy_path.read_text(encoding="utf-8"))
    policy["reference_lists"] = ["web_images.parquet"]
    policy_path.write_text(yaml.safe_dump(policy), encoding="utf-8")
    options = ImageOptions(mirror=w["mirror"], commons_api=w["api"], allow=("127.0.0.1",), cache=w["cache"])
    with pytest.raises(ValidationFailed) as info:
        get_builder("borsch").build(source=str(w["source"]), out_root=tmp_path / "dist", images=options)
    hits = [f for f in info.value.report.errors if f.check == "images:contamination"]
    # The astronaut and its resized copy are both near-copies of the web image.
    assert len(hits) == 2 and all("https://example.org/astronaut.jpg" in f.message for f in hits)
    assert not (tmp_path / "dist" / "borsch" / "1.0.0").exists()
    waivers = [
        {
            "check": "images:contamination",
            "image": w["rows"][k]["sha256"],
            "reviewer": "maintainer",
            "reason": "licensed Commons photo, reviewed",
        }
        for k in (0, 1)
    ]
    (datasets / "borsch" / "waivers.yaml").write_text(yaml.safe_dump({"waivers": waivers}), encoding="utf-8")
    result = get_builder("borsch").build(source=str(w["source"]), out_root=tmp_path / "dist", images=options)
    waived = [f for f in result.report.warnings if f.check == "images:contamination"]
    assert len(waived) == 2 and all("waived by maintainer" in f.message for f in waived)
    from culturebench.validation import validate_release

    sheet = tmp_path / "sheet.html"
    validate_release(result.folder, croissant_records=False, contact_sheet=sheet)
    assert "data:image/png;base64" in sheet.read_text(encoding="utf-8")


@pytest.mark.integration
def test_wwd_links_get_images_licences_and_statuses(upstream_wwd: Path, tmp_path: Path, servers) -> None:
    import csv as _csv
    from urllib.parse import unquote, urlsplit

    with open(
        upstream_wwd / "WorldWideDishes_2024_June_World_Wide_Dishes.csv", encoding="utf-8", newline=""
    ) as f:
        rows = list(_csv.DictReader(f))
    commons = next(
        r["public_cc_image_url"] for r in rows if "upload.wikimedia.org" in r["public_cc_image_url"]
    )
    flickr = next(r["public_cc_image_url"] for r in rows if "staticflickr" in r["public_cc_image_url"])
    drive = next(r["uploaded_image_url"] for r in rows if r["uploaded_image_url"])
    mirror = tmp_path / "mirror"
    for k, url in enumerate((commons, flickr, drive)):
        parts = urlsplit(url)
        target = mirror / parts.netloc / unquote(parts.path).lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(noise(500 + k, size=64))
    title = commons_title(commons)
    files = {title: {"sha1": "-", "license": "CC BY-SA 3.0", "license_url": "", "artist": "Commons Author"}}
    with servers.serve_folder(mirror) as base, servers.commons_replay(files) as (api, _seen):
        options = ImageOptions(
            mirror=base, commons_api=api, allow=("127.0.0.1",), cache=ImageCache(tmp_path / "c")
        )
        result = get_builder("wwd").build(
            source=str(upstream_wwd), out_root=tmp_path / "dist", images=options
        )
    import pyarrow.parquet as pq

    links = [
        link
        for f in result.manifest["configs"]["default"]["splits"]["test"]["files"]
        for row in pq.read_table(result.folder / f["path"]).to_pylist()
        for link in row["links"]
    ]
    by_url = {link["url"]: link for link in links}
    assert by_url[commons]["status"] == "embedded" and by_url[commons]["license"] == "CC-BY-SA-3.0"
    assert by_url[commons]["author"] == "Commons Author" and by_url[commons]["image"]["bytes"]
    assert by_url[drive]["status"] == "embedded" and by_url[drive]["license"] == "CC-BY-4.0"
    assert by_url[flickr]["status"] == "url_only" and by_url[flickr]["image"] is None
    images = [link for link in links if link["kind"] != "recipe" and (link["url"] or "").startswith("http")]
    failed = [link for link in images if (link["status"] or "").startswith("failed:")]
    assert len(failed) == len(images) - 3 and all(link["status"] == "failed:http_404" for link in failed)
    assert all(link["status"] is None for link in links if link["kind"] == "recipe")
    assert {"images:integrity", "images:near_duplicates"} <= set(result.report.checks_run)
    assert result.report.ok


@pytest.mark.integration
def test_cli_build_with_images_against_a_local_mirror(image_world) -> None:
    """The documented command line, end to end: `build --images --image-mirror ... --allow`."""
    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    from culturebench.cli import app

    w = image_world
    out = w["tmp"] / "cli-dist"
    args = ["build", "borsch", "--source", str(w["source"]), "--out", str(out), "--images"]
    args += ["--image-mirror", w["mirror"], "--commons-api", w["api"], "--allow", "127.0.0.1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    statuses = {}
    for path in sorted((out / "borsch" / "1.0.0" / "data" / "ru").glob("*.parquet")):
        for row in pq.read_table(path).to_pylist():
            for record in row["images"]:
                statuses[record["upstream_path"]] = record["status"]
    paths = [row["path"] for row in w["rows"] if row["language"] == "ru"]
    assert statuses[paths[2]] == "failed:checksum_mismatch"
    assert "embedded" in statuses.values() and "url_only" in statuses.values()


def test_cli_image_flags_need_images(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from culturebench.cli import app

    result = CliRunner().invoke(app, ["build", "borsch", "--out", str(tmp_path), "--offline-images"])
    assert result.exit_code == 2 and "need --images" in result.output


def test_reference_lists_stream_in_batches_with_recall_one(tmp_path: Path, monkeypatch) -> None:
    """A reference collection in several Parquet shards (several row groups each) is streamed
    against an index of the release's hashes: exactly the brute-force pairs, in any batch size."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from culturebench.images.phash import to_array
    from culturebench.validation import images as checks

    rng = np.random.default_rng(7)
    release = rng.integers(0, 2**64 - 1, size=40, dtype=np.uint64, endpoint=True)
    threshold = 8
    folder = tmp_path / "refs"
    folder.mkdir()
    planted = []
    for s in range(3):
        ref = rng.integers(0, 2**64 - 1, size=20_000, dtype=np.uint64, endpoint=True)
        for k in range(12):  # neighbours of release hashes at distances 0 .. threshold + 3
            bits = rng.choice(64, size=k, replace=False)
            value = release[(s * 12 + k) % len(release)]
            for b in bits:
                value ^= np.uint64(1 << int(b))
            ref[k * 1000] = value
            planted.append(k)
        hexes = [f"{int(v):016x}" for v in ref]
        table = pa.table(
            {"phash": hexes, "source": [f"https://web.example/{s}/{i}" for i in range(len(ref))]}
        )
        pq.write_table(table, folder / f"part-{s}.parquet", row_group_size=7_000)
    expected = set()
    for part in sorted(folder.iterdir()):
        rows = pq.read_table(part).to_pylist()
        refs = to_array([r["phash"] for r in rows])
        for a, value in enumerate(release):
            for b in np.flatnonzero(np.bitwise_count(refs ^ value) <= threshold):
                expected.add((a, rows[b]["phash"], rows[b]["source"]))
    assert len(expected) >= sum(1 for k in planted if k <= threshold)
    for batch in (1_000, 1 << 16):
        monkeypatch.setattr(checks, "REFERENCE_BATCH", batch)
        found = checks.stream_reference_matches(release, folder, threshold)
        assert set(found) == expected and len(found) == len(expected)
    with pytest.raises(Exception, match="no such Parquet"):
        checks.stream_reference_matches(release, tmp_path / "missing.parquet", threshold)


def test_compiled_index_kernel_equals_the_numpy_path(monkeypatch) -> None:
    """With numba installed (the corpus extra), large queries go through a compiled kernel:
    exactly the numpy path's pairs, also when it must retry with a larger output buffer."""
    pytest.importorskip("numba")
    from culturebench.images import index as idx

    rng = np.random.default_rng(11)
    hashes = rng.integers(0, 2**64 - 1, size=30_000, dtype=np.uint64, endpoint=True)
    queries = np.concatenate(
        [hashes[:300] ^ np.uint64(0b101 << 7), rng.integers(0, 2**64 - 1, size=300, dtype=np.uint64)]
    )
    monkeypatch.setattr(idx, "KERNEL_MIN_WORK", 0)
    monkeypatch.setattr(idx, "KERNEL_BLOCK", 97)  # several blocks: query numbers offset per block
    for threshold in (3, 10):
        index = idx.HashIndex(hashes, threshold)
        qi, ii = index.query_many(queries)
        qn, iin = index._query_numpy(queries)
        assert np.array_equal(qi, qn) and np.array_equal(ii, iin) and len(qi) >= 300
    dense = np.repeat(hashes[:5], 400)  # many equal hashes: more matches than the first buffer holds
    index = idx.HashIndex(dense, 2)
    qi, ii = index.query_many(hashes[:5])
    assert len(qi) == 2000 and np.array_equal(np.bincount(qi), [400] * 5)


# ------------------------------------------------------------------- a mirror that never answers
def _accepted(connections: list, at_least: int) -> int:
    """How many connections the silent server accepted, once it has caught up with ``at_least``
    (its accept loop runs on its own thread; waits in short slices, 10 s at most)."""
    import time

    for _ in range(100):
        if len(connections) >= at_least:
            break
        time.sleep(0.1)
    return len(connections)


def test_a_silent_host_costs_a_bounded_number_of_timeouts(tmp_path: Path) -> None:
    """Issue 53: each image from a host that accepts connections and never answers waited its
    whole deadline, one after another (about 30 minutes for a mirror of a few hundred images).
    Now, after GIVE_UP_AFTER_TIMEOUTS timeouts in a row, the host's other images are not tried."""
    from culturebench.images.fetch import GIVE_UP_AFTER_TIMEOUTS, FetchRequest, fetch_images
    from tests.servers import never_answers

    with never_answers() as (base, connections):
        requests = [FetchRequest(key=f"k{i}", url=f"{base}img/{i}.png") for i in range(12)]
        results = fetch_images(
            requests, cache=ImageCache(tmp_path / "c"), concurrency=1, timeout_s=0.5, allow=("127.0.0.1",)
        )
        assert _accepted(connections, GIVE_UP_AFTER_TIMEOUTS) == GIVE_UP_AFTER_TIMEOUTS  # was 12
    assert [results[r.key].error for r in requests] == ["timeout"] * 12


@pytest.mark.integration
def test_cli_build_against_a_silent_mirror_fails_in_one_line_naming_the_url(
    image_source, tmp_path: Path
) -> None:
    """``--image-timeout`` bounds each download; the stage fails with one line naming the first
    URL that timed out, after a bounded number of connections (not one per image)."""
    from typer.testing import CliRunner

    from culturebench.cli import app
    from culturebench.images.fetch import GIVE_UP_AFTER_TIMEOUTS
    from tests.servers import never_answers

    source, _served, _titles, rows = image_source(tmp_path, lambda k, row: (b"x", b"x"), lambda k: False)
    out = tmp_path / "dist"
    with never_answers() as (base, connections):
        args = ["build", "borsch", "--source", str(source), "--out", str(out), "--images"]
        args += [
            "--image-mirror",
            base,
            "--allow",
            "127.0.0.1",
            "--commons-api",
            "none",
            "--image-timeout",
            "1",
        ]
        result = CliRunner().invoke(app, args)
        concurrency = ImageOptions().concurrency
        assert _accepted(connections, concurrency) <= concurrency + GIVE_UP_AFTER_TIMEOUTS < len(rows)
    assert result.exit_code != 0, result.output
    lines = [line for line in result.output.splitlines() if base in line]
    assert len(lines) == 1, result.output
    assert "timeout" in lines[0] and "within 1 s" in lines[0] and "--image-timeout" in lines[0], lines[0]
    assert "Traceback" not in result.output and not (out / "borsch").exists()
