"""`culturebench site`, tested in a real browser: Debian's Chromium driven by Playwright
(`executable_path`, no browser download). Every page kind is opened over ``file://`` and over
a static server on 127.0.0.1; each must log no console error and make no request outside the
site. The numbers on the pages are checked against the runs' own ``results.json`` and
``samples.jsonl``, the filters against counts made here from the samples, the charts by
counting their marks, and VQA thumbnails by their decoded width. Screenshots are written to
``$CULTUREBENCH_ARTIFACTS/site`` (else a temporary folder)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.extra("site")]

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def runs(
    borsch_release, foodieqa_release, scripted_backend, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """Real runs through the run loop: two BORSCH origin-qa runs (a map, a confusion matrix, a
    comparison) and a FoodieQA single-image run on a release built with images (thumbnails)."""
    from culturebench.eval.runner import run_eval

    scripted = scripted_backend
    root = tmp_path_factory.mktemp("site-runs")
    out = {}
    for name, answer in (("a", "Россия"), ("b", lambda p: "Україна" if "Україн" in p else "Узбекистан")):
        out[f"borsch-{name}"] = root / f"borsch-{name}"
        run_eval(
            "borsch",
            "origin-qa",
            scripted(answer, model=f"model-{name}"),
            out[f"borsch-{name}"],
            local=str(borsch_release.folder),
            limit=40,
        )
    foodieqa = foodieqa_release
    out["foodieqa-release"] = foodieqa.folder
    out["foodieqa"] = root / "foodieqa"
    run_eval(
        "foodieqa", "single-image", scripted("B", model="vlm-b"), out["foodieqa"], local=str(foodieqa.folder)
    )
    return out


@pytest.fixture(scope="module")
def url_check(borsch_release, servers, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A URL-check report folder of BORSCH: the real checker run against a local server (one
    link that answers, two that 404, standing for three rows of the release), written by the
    real report writer. (The release's own URLs are on public hosts: never checked in tests.)"""
    import pyarrow.parquet as pq

    from culturebench.outputs import OutputKind, write_marker
    from culturebench.urlcheck import CheckConfig, UrlChecker, UrlItem
    from culturebench.urlcheck.history import load_history, save_history, update_history
    from culturebench.urlcheck.run_files import write_reports

    ids = pq.read_table(borsch_release.folder / "data" / "ru" / "test-00000-of-00001.parquet").column("id")
    rows = [str(v) for v in ids.to_pylist()[:3]]
    folder = tmp_path_factory.mktemp("urls") / "borsch"
    config = CheckConfig(timeout_s=3, retries=0, backoff_s=0, per_host_delay_s=0, allow=("127.0.0.1",))
    with servers.link_server() as (base, _server):
        items = [
            UrlItem(url=base + path, kind="image", dataset="borsch", config="ru", row_id=row, field="images")
            for path, row in zip(("/ok.png", "/404.png", "/410.png"), rows, strict=True)
        ]
        results = UrlChecker(config).check_all(items)
    history = load_history(None)
    diff = update_history(history, results, "2026-11-27T00:00:00Z")
    write_reports(folder, "borsch", results, diff, "2026-11-27T00:00:00Z")
    save_history(folder / "history.json", history)
    write_marker(folder, OutputKind("url-check", ("history.json",)))
    return folder


@pytest.fixture(scope="module")
def site(
    runs, gpt35_recorded: Path, borsch_release, url_check: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    from typer.testing import CliRunner

    from culturebench.cli import app

    root = tmp_path_factory.mktemp("site")
    paper = root / "paper"
    tasks = ("country", "description", "ingredients", "meal-type", "time-of-day", "utensils")
    done = CliRunner().invoke(
        app, ["eval", "paper", "wwd", *(str(gpt35_recorded / t) for t in tasks), "--out", str(paper)]
    )
    assert done.exit_code == 0, done.output
    out = root / "site"
    inputs = [
        runs["borsch-a"],
        runs["borsch-b"],
        runs["foodieqa"],
        gpt35_recorded,
        paper,
        borsch_release.folder,
        url_check,
    ]
    done = CliRunner().invoke(app, ["site", *map(str, inputs), "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert "site: 9 runs" in " ".join(done.output.split()), done.output
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not CHROMIUM.is_file():
        if os.environ.get("CI"):
            pytest.fail("CI must have Debian's chromium (.ci/run installs it)")
        pytest.skip("no /usr/bin/chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield instance
        instance.close()


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = os.environ.get("CULTUREBENCH_ARTIFACTS")
    folder = Path(base) / "site" if base else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module", params=["file", "http"])
def opener(request, site: Path, browser, artifacts: Path):
    """``open(rel) -> page``: a page of the site over file:// or a 127.0.0.1 server, in a
    context that aborts (and records) every request leaving the site; console errors and page
    errors are recorded on the page."""
    from culturebench.site.serve import site_server

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    outside: list[str] = []
    with site_server(site) as index:
        base = index.rsplit("/", 1)[0] + "/" if request.param == "http" else site.resolve().as_uri() + "/"

        def route(r) -> None:
            url = r.request.url
            if url.startswith(base) or url.startswith(("data:", "blob:")):
                r.continue_()
            else:
                outside.append(url)
                r.abort()

        context.route("**/*", route)

        def open_page(rel: str):
            page = context.new_page()
            page.errors = []
            page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: page.errors.append(str(e)))
            page.goto(base + rel)
            page.wait_for_load_state("load")
            return page

        open_page.transport = request.param
        open_page.outside = outside
        open_page.shot = lambda page, name: page.screenshot(
            path=str(artifacts / f"{name}-{request.param}.png")
        )
        yield open_page
    context.close()
    assert outside == [], outside


def _slug(site: Path, dataset: str, task: str, model: str) -> str:
    for path in sorted((site / "runs").glob(f"{dataset}-{task}-*.html")):
        if f'<span class="model">{model}</span></h1>' in path.read_text(encoding="utf-8"):
            return path.stem
    raise AssertionError(f"no run page of {dataset}/{task} {model}")


def _samples(folder: Path) -> list[dict]:
    return [
        json.loads(line)
        for line in (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()
        if line
    ]


def test_leaderboard(opener, site: Path, runs) -> None:
    page = opener("index.html")
    rows = page.locator("#leaderboard tbody tr")
    assert rows.count() == 9
    text = page.inner_text("#leaderboard")
    for model in ("model-a", "model-b", "vlm-b", "GPT 3.5"):  # the authors' files by the paper's name
        assert model in text
    results = json.loads((runs["foodieqa"] / "results.json").read_text(encoding="utf-8"))
    row = page.locator("#leaderboard tbody tr", has_text="vlm-b")
    assert f"{results['metrics']['accuracy']:.3f}" in row.inner_text()
    assert str(results["samples"]) in row.inner_text()
    # filters: kind=vision leaves the VQA run; dataset=wwd the six recorded scorings
    page.select_option("select[name=kind]", "vision")
    assert page.locator("#leaderboard tbody tr:visible").count() == 1
    page.select_option("select[name=kind]", "")
    page.select_option("select[name=dataset]", "wwd")
    assert page.locator("#leaderboard tbody tr:visible").count() == 6
    assert page.input_value("select[name=dataset]") == "wwd"
    assert "6 of 9 runs" in page.inner_text("form[data-filters=leaderboard] output")
    page.select_option("select[name=dataset]", "")
    page.select_option("select[name=language]", "en")  # the recorded GPT-3.5 runs name it in their samples
    assert page.locator("#leaderboard tbody tr:visible").count() == 6 + 1  # and the VQA run's en prompts
    page.select_option("select[name=language]", "")
    # the papers' printed rows, tagged, beside ours
    assert page.locator("table.printed-table .tag.printed").count() > 0
    # keyboard: Tab to a column's sort button, Enter sorts
    page.select_option("select[name=dataset]", "")
    page.focus("#leaderboard th:nth-child(7) button")
    page.keyboard.press("Enter")
    assert page.get_attribute("#leaderboard th:nth-child(7)", "aria-sort") == "ascending"
    values = [
        float(v) for v in page.locator("#leaderboard tbody td:nth-child(7)").all_inner_texts() if v != "-"
    ]
    assert values == sorted(values)
    opener.shot(page, "leaderboard")
    assert page.errors == []


def test_run_page_map_and_confusion(opener, site: Path, runs) -> None:
    from culturebench.site.charts import world

    slug = _slug(site, "borsch", "origin-qa", "model-b")
    page = opener(f"runs/{slug}.html")
    metrics = json.loads((runs["borsch-b"] / "results.json").read_text(encoding="utf-8"))["metrics"]
    shapes = {f["id"] for f in world()["features"]}
    per_country = metrics["ru"]["per_country"]
    expected = sum(code in shapes for code in per_country)
    figure = page.locator("figure[data-chart=map]", has_text="ru: per_country")
    assert figure.locator("g.values_marks path").count() == expected > 3
    matrix = metrics["ru"]["confusion"]
    heat = page.locator("figure[data-chart=confusion]", has_text="(ru)")
    assert heat.locator("g.cells_marks path").count() == len(matrix["labels"]) * len(matrix["columns"])
    assert f"{metrics['ru']['jaccard']['mean']:.3f}" in page.inner_text("#by-group")
    assert "false_language_country_rate" in page.inner_text("main")  # the over-prediction block
    opener.shot(page, "run")
    assert page.errors == []


def test_samples_filters_and_search(opener, site: Path, runs) -> None:
    slug = _slug(site, "borsch", "origin-qa", "model-b")
    page = opener(f"samples/{slug}.html")
    samples = _samples(runs["borsch-b"])
    assert page.inner_text("#sample-count") == f"{len(samples)} of {len(samples)} samples"
    page.select_option("select[name=lang]", "uk")
    uk = sum(s["lang"] == "uk" for s in samples)
    assert page.inner_text("#sample-count") == f"{uk} of {len(samples)} samples"
    assert page.locator("#samples tbody tr").count() == min(uk, 50)
    page.select_option("select[name=lang]", "")
    target = samples[17]
    page.fill("input[name=q]", target["id"])
    assert page.inner_text("#sample-count") == f"1 of {len(samples)} samples"
    row = page.locator("#samples tbody tr")
    assert row.locator("td").nth(1).inner_text() == target["id"]
    link = row.locator("td a").first
    assert link.get_attribute("href").endswith("samples.jsonl#L18")
    assert str(target["predicted"]).strip("[]'") in row.inner_text()
    opener.shot(page, "samples")
    assert page.errors == []


def test_vqa_sample_images_decode(opener, site: Path) -> None:
    slug = _slug(site, "foodieqa", "single-image", "vlm-b")
    page = opener(f"samples/{slug}.html")
    images = page.locator("#samples tbody tr").first.locator(".thumbs img")
    assert images.count() == 1
    images.first.scroll_into_view_if_needed()
    page.wait_for_function("img => img.complete", arg=images.first.element_handle())
    assert images.first.evaluate("img => img.naturalWidth") > 0
    assert page.errors == []


def test_compare_and_paper_pages(opener, site: Path) -> None:
    (compare,) = sorted((site / "compare").glob("borsch-origin-qa-*.html"))
    page = opener(f"compare/{compare.name}")
    assert page.locator("#differences tbody tr").count() > 0
    assert page.locator("#disagreements tbody tr").count() > 0
    assert page.errors == []
    (paper,) = sorted((site / "papers").glob("wwd-*.html"))
    page = opener(f"papers/{paper.name}")
    h9 = page.locator("section", has_text="Table H.9")
    assert "28 of" in h9.inner_text()  # 28 of the printed GPT-3.5 cells equal (docs/datasets/wwd.md)
    assert h9.locator("td.equal").count() >= 28
    opener.shot(page, "paper")
    assert page.errors == []


def test_release_review(opener, site: Path, borsch_release) -> None:
    import pyarrow.parquet as pq

    page = opener("releases/borsch-1-0-0.html")
    assert "validation passed: 0 error(s)" in page.inner_text("main")
    broken = page.locator("#broken-links tbody tr")
    assert broken.count() == 2  # the two links that answered 404 and 410
    assert "http_404" in page.inner_text("main") and "http_410" in page.inner_text("main")
    shown = page.locator("#release-rows tbody tr").count()
    rows = pq.read_table(borsch_release.folder / "data" / "ru" / "test-00000-of-00001.parquet").num_rows
    assert shown == min(rows, 300)
    assert page.errors == []


def test_same_inputs_same_bytes(runs, site: Path, tmp_path: Path) -> None:
    """A second build of the same folders is byte-identical (no clock, paths or random ids)."""
    from culturebench.site.build import build_site

    inputs = [runs["borsch-a"], runs["borsch-b"]]
    build_site(inputs, tmp_path / "one")
    build_site(inputs, tmp_path / "two")

    def digests(folder: Path) -> dict[str, str]:
        return {
            str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.startswith(".culturebench")
        }

    one, two = digests(tmp_path / "one"), digests(tmp_path / "two")
    assert one == two and len(one) > 10


@pytest.mark.unit
def test_a_folder_with_nothing_to_show_is_one_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from culturebench.cli import app

    (tmp_path / "empty").mkdir()
    done = CliRunner().invoke(app, ["site", str(tmp_path / "empty"), "--out", str(tmp_path / "site")])
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert done.exit_code == 2 and len(lines) == 1, done.output
    assert "no finished run" in lines[0] and not (tmp_path / "site").exists()


def test_to_space_is_one_commit_with_the_card(
    runs, servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`site --to` against the fake Hub commit API of tests/servers.py (a hand-written fake of
    the Hub's create-repo, preupload and commit endpoints, on 127.0.0.1)."""
    from typer.testing import CliRunner

    from culturebench.cli import app

    with servers.fake_hub() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_TOKEN", "hf_" + "x" * 30)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)
        done = CliRunner().invoke(
            app, ["site", str(runs["borsch-a"]), "--out", str(tmp_path / "site"), "--to", "org/results"]
        )
    assert done.exit_code == 0, done.output
    assert ("POST", "/api/repos/create") in hub.requests
    assert hub.created[0]["type"] == "space" and hub.created[0]["sdk"] == "static"
    (commit,) = hub.pulls
    assert commit.repo == "org/results" and not commit.create_pr
    assert b"sdk: static" in commit.files["README.md"]
    built = {str(p.relative_to(tmp_path / "site")) for p in (tmp_path / "site").rglob("*") if p.is_file()}
    assert {f for f in built if not f.startswith(".culturebench")} | {"README.md"} == set(commit.files)


def _copy_run(runs, tmp_path: Path, name: str = "run") -> Path:
    import shutil

    return Path(shutil.copytree(runs["borsch-a"], tmp_path / name))


def test_unreadable_sample_lines_are_counted_not_hidden(runs, tmp_path: Path) -> None:
    """A corrupt middle line and an undecodable byte (probe cases): the site is built, the
    samples that read are shown, and the page says how many lines did not."""
    from typer.testing import CliRunner

    from culturebench.cli import app

    run = _copy_run(runs, tmp_path)
    lines = (run / "samples.jsonl").read_bytes().split(b"\n")
    lines[3] = b"{not json"
    (run / "samples.jsonl").write_bytes(b"\n".join(lines) + b"\xff\n")
    clean = _copy_run(runs, tmp_path, "clean")  # a comparison reads the damaged file too
    done = CliRunner().invoke(app, ["site", str(run), str(clean), "--out", str(tmp_path / "site")])
    assert done.exit_code == 0, done.output
    assert len(list((tmp_path / "site" / "compare").glob("*.html"))) == 1
    page = next(p for p in (tmp_path / "site" / "samples").glob("*.html") if "unreadable" in p.read_text())
    text = page.read_text(encoding="utf-8")
    good = sum(1 for line in lines if line.strip()) - 1
    assert f"{good} samples" in text and "2 unreadable line" in text


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        ("paper-not-an-object", "paper_report.json: not an `eval paper` report"),
        ("ragged-confusion", "this run cannot be shown"),
        ("languages-a-number", None),
        ("given-twice", None),
        ("no-run-json", "without run.json"),
    ],
)
def test_malformed_inputs_are_one_line(runs, tmp_path: Path, case: str, needle: str | None) -> None:
    """Inputs that are not what culturebench writes (probe cases): one line naming the folder,
    exit 2, and no --out left behind; or, where the input is usable, a site."""
    from typer.testing import CliRunner

    from culturebench.cli import app

    run = _copy_run(runs, tmp_path)
    inputs = [run]
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    if case == "paper-not-an-object":
        (tmp_path / "paper").mkdir()
        (tmp_path / "paper" / "paper_report.json").write_text("[1]", encoding="utf-8")
        inputs.append(tmp_path / "paper")
    elif case == "ragged-confusion":
        results["metrics"]["ru"]["confusion"]["matrix"] = [[1, 2], [3]]
    elif case == "languages-a-number":
        results["provenance"]["languages"] = 5
    elif case == "given-twice":
        inputs.append(run)
    elif case == "no-run-json":
        (run / "run.json").unlink()
    (run / "results.json").write_text(json.dumps(results), encoding="utf-8")
    done = CliRunner().invoke(app, ["site", *map(str, inputs), "--out", str(tmp_path / "site")])
    lines = [line for line in done.output.splitlines() if line.strip()]
    if needle is None:
        assert done.exit_code == 0, done.output
        assert (tmp_path / "site" / "index.html").is_file()
        return
    assert done.exit_code == 2 and len(lines) == 1, done.output
    assert needle in " ".join(done.output.split()) and "unexpected" not in done.output, done.output
    assert not (tmp_path / "site").exists()


def test_no_output_inside_a_paper_report_or_a_site(runs, site: Path, tmp_path: Path) -> None:
    """An `eval paper` output and a site are replaced whole by their commands: a folder written
    inside one would be deleted with it, so every command refuses to write there."""
    from typer.testing import CliRunner

    from culturebench.cli import app

    paper = site.parent / "paper"  # the eval paper output the site fixture made
    for target in (paper / "site", site / "again"):
        done = CliRunner().invoke(app, ["site", str(runs["borsch-a"]), "--out", str(target)])
        assert done.exit_code == 2 and "is inside the" in done.output, done.output
        assert not target.exists()


# ------------------------------------------------------------------ the site runs nothing it did not write
def _hrefs(folder: Path) -> list[str]:
    """Every ``href`` and ``src`` of every page of a built site."""
    from html.parser import HTMLParser

    found: list[str] = []

    class Links(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.extend(v or "" for k, v in attrs if k in ("href", "src"))

    for page in sorted(folder.rglob("*.html")):
        Links().feed(page.read_text(encoding="utf-8"))
    return found


def test_release_image_urls_link_only_over_http(borsch_release, tmp_path: Path) -> None:
    """Probe case: a release row's image URL `javascript:...` (or `data:`) was a clickable link
    on the release review. Now only http(s) URLs are links; the others are shown as text."""
    import shutil
    from urllib.parse import urlsplit

    import pyarrow as pa
    import pyarrow.parquet as pq

    from culturebench.site.build import build_site

    release = Path(shutil.copytree(borsch_release.folder, tmp_path / "release"))
    # the review shows the first config with images
    path = next(p for p in sorted(release.glob("data/*/*.parquet")) if "images" in pq.read_schema(p).names)
    table = pq.read_table(path)
    rows = table.to_pylist()
    first = next(r for r in rows if len(r["images"] or []) >= 2)
    first["images"][0]["url"] = "javascript:alert(document.domain)"
    first["images"][1]["url"] = "data:text/html,<script>alert(1)</script>"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    build_site([release], tmp_path / "site")
    page = next((tmp_path / "site" / "releases").glob("*.html")).read_text(encoding="utf-8")
    links = _hrefs(tmp_path / "site")
    assert all(urlsplit(link).scheme in ("", "http", "https") for link in links), links
    assert any(link.startswith("https://") for link in links)  # the real sources stay links
    assert "javascript:alert(document.domain)" in page  # shown, as text
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page


def test_every_page_has_the_policy_and_no_inline_script(site: Path) -> None:
    """Every page carries the Content-Security-Policy (only the site's own scripts, styles and
    images) and has no inline script for it to allow (the samples page's was moved to site.js)."""

    from html.parser import HTMLParser

    from culturebench.site.safety import CSP

    class Head(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.policies: list[str | None] = []
            self.inline: list[str] = []
            self.handlers: list[str] = []
            self._script = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            named = dict(attrs)
            if tag == "meta" and named.get("http-equiv") == "Content-Security-Policy":
                self.policies.append(named.get("content"))
            self._script = tag == "script" and not named.get("src")
            self.handlers += [k for k, _v in attrs if k.startswith("on")]

        def handle_data(self, data: str) -> None:
            if self._script and data.strip():
                self.inline.append(data)

        def handle_endtag(self, tag: str) -> None:
            self._script = False

    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 10
    for page in pages:
        head = Head()
        head.feed(page.read_text(encoding="utf-8"))
        assert head.policies == [CSP], page
        assert head.inline == [] and head.handlers == [], page  # every script is a file


@pytest.mark.parametrize("transport", ["file", "http"])
def test_the_policy_stops_what_the_site_did_not_write(
    site: Path, browser, tmp_path: Path, transport: str
) -> None:
    """A page with an inline script and an image from elsewhere injected (as a name or text from
    data would be, were it not escaped): in the browser, neither runs nor loads."""
    import shutil

    from culturebench.site.serve import site_server

    probe = tmp_path / "probe"
    shutil.copytree(site / "assets", probe / "assets")
    text = (site / "index.html").read_text(encoding="utf-8")
    (probe / "index.html").write_text(text, encoding="utf-8")  # the injection below, once a port is known
    other = tmp_path / "elsewhere"  # another origin (another port), which would answer the image
    other.mkdir()
    (other / "index.html").write_text("<!doctype html>", encoding="utf-8")
    (other / "x.png").write_bytes(b"not really a png")
    context = browser.new_context()
    loaded: list[str] = []
    context.on("requestfinished", lambda r: loaded.append(r.url))
    with site_server(probe) as index, site_server(other) as elsewhere:
        image = elsewhere.replace("index.html", "x.png")
        injected = f'<script>document.title = "ran"</script><img src="{image}">'
        (probe / "index.html").write_text(text.replace("<main", injected + "<main", 1), encoding="utf-8")
        page = context.new_page()
        refused: list[str] = []
        page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
        page.goto(index if transport == "http" else (probe / "index.html").resolve().as_uri())
        page.wait_for_load_state("load")
        assert page.title() != "ran"
        assert not any(url.endswith("/x.png") for url in loaded), loaded
        assert len(refused) >= 2, refused  # the script and the image, each refused
        assert page.locator("#leaderboard tbody tr").count() > 0  # the site's own script ran
    context.close()


def test_serve_sends_the_policy(site: Path) -> None:
    import urllib.request

    from culturebench.site.safety import CSP
    from culturebench.site.serve import site_server

    with site_server(site) as index, urllib.request.urlopen(index) as answer:
        assert answer.headers["Content-Security-Policy"].startswith(CSP)
        assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]


def test_a_samples_file_linked_outside_the_run_is_not_followed(runs, tmp_path: Path) -> None:
    """Probe case: a run's samples.jsonl that is a link to a file outside the run was copied
    into the site. Now the run is passed over with the reason (alone: one line, exit 2)."""
    from typer.testing import CliRunner

    from culturebench.cli import app

    secret = tmp_path / "elsewhere" / "secret.jsonl"
    secret.parent.mkdir()
    secret.write_text('{"id": "x", "prompt": "SECRET-7f3a", "output": "SECRET-7f3a"}\n', encoding="utf-8")
    parent = tmp_path / "runs"
    run = _copy_run(runs, parent, "linked")
    (run / "samples.jsonl").unlink()
    (run / "samples.jsonl").symlink_to(secret)
    done = CliRunner().invoke(app, ["site", str(run), "--out", str(tmp_path / "alone")])
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert done.exit_code == 2 and len(lines) == 1, done.output
    assert "samples.jsonl is a link to outside the folder" in " ".join(done.output.split())
    assert not (tmp_path / "alone").exists()

    _copy_run(runs, parent, "clean")
    done = CliRunner().invoke(app, ["site", str(parent), "--out", str(tmp_path / "site")])
    assert done.exit_code == 0, done.output
    assert "not shown:" in done.output and "link to outside" in " ".join(done.output.split())
    built = [p for p in (tmp_path / "site").rglob("*") if p.is_file()]
    assert not any(b"SECRET-7f3a" in p.read_bytes() for p in built)
    assert "link to outside the folder" in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")


def test_no_absolute_path_in_any_file_of_the_site(
    runs, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Probe case: each run's results.json was copied as is, so this machine's paths reached a
    site that `--to` publishes. A run whose results.json names the repository, a
    temporary folder and the home folder (and an unfinished run, named on the index), built
    from absolute paths: no file of the site holds any of them."""
    from typer.testing import CliRunner

    from culturebench.cli import app

    repo = Path(__file__).resolve().parents[1]
    home = Path.home()
    base = tmp_path_factory.getbasetemp().resolve()
    parent = (tmp_path / "runs").resolve()
    run = _copy_run(runs, parent)
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    prov = results["provenance"]
    prov["dataset"]["location"] = str(repo / "dist" / "borsch" / "1.0.0")
    prov["generations"] = [{"file": str(home / "outputs" / "answers.csv")}, {"file": str(run / "in.csv")}]
    prov["note"] = f"read from {tmp_path.resolve()}/inputs/answers.csv and file://{home}/x/y.csv"
    results.setdefault("coverage", {})["release"] = {"location": str(repo / "dist")}
    (run / "results.json").write_text(json.dumps(results), encoding="utf-8")
    (parent / "unfinished").mkdir()
    (parent / "unfinished" / "run.json").write_text("{}", encoding="utf-8")
    done = CliRunner().invoke(app, ["site", str(parent), "--out", str(tmp_path / "site")])
    assert done.exit_code == 0, done.output
    built = [p for p in (tmp_path / "site").rglob("*") if p.is_file()]
    assert len(built) > 5
    for needle in (str(repo), str(base), f"{home}/"):
        held = [str(p.relative_to(tmp_path)) for p in built if needle.encode() in p.read_bytes()]
        assert held == [], f"{needle} in {held}"
    copied = json.loads(next((tmp_path / "site" / "data").glob("*/results.json")).read_text(encoding="utf-8"))
    assert copied["provenance"]["generations"] == [{"file": "answers.csv"}, {"file": "in.csv"}]
    assert copied["metrics"] == results["metrics"]  # the numbers untouched
    assert "unfinished" in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
