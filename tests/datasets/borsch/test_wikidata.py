"""The BORSCH Wikidata stage against a real SPARQL server: oxigraph, started by the tests on
127.0.0.1 over a Turtle fixture in Wikidata's shape (tests/data/wikidata_fixture.ttl:
P31/P279* chains, P495, P297, labels in ru/uk/en, an item with two origins, an origin without
P297, a label missing in one language), plus a proxy in front of it that fails on cue."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from culturebench.cli import app

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "wikidata_fixture.ttl"


@pytest.fixture(scope="module")
def endpoint(servers, tmp_path_factory):
    with servers.sparql_endpoint(FIXTURE, tmp_path_factory.mktemp("oxigraph")) as url:
        yield url


def _fetch(endpoint: str, out: Path, lang: str = "ru", **kw):
    from culturebench.datasets.borsch.wikidata import fetch_candidates

    kw.setdefault("cache_dir", None)
    kw.setdefault("allow", ("127.0.0.1",))  # the test servers are on the (non-public) loopback
    return fetch_candidates(endpoint, lang, out, **kw)


def _table(out: Path) -> list[tuple]:
    rows = pq.read_table(out / "candidates.parquet").to_pylist()
    return [
        (
            r["qid"],
            r["label"],
            r["label_ru"],
            r["label_uk"],
            r["label_en"],
            r["origins"],
            r["origins_without_iso"],
        )
        for r in rows
    ]


RU = [
    ("Q90000001", "дакос", "дакос", "дакос", "dakos", ["GR"], []),
    ("Q90000002", "джолоф", "джолоф", "джолоф", "jollof rice", ["GH", "NG", "SN"], []),
    ("Q90000003", "буйабес", "буйабес", None, "bouillabaisse", ["FR", "MC"], []),
    ("Q90000004", "оливье", "оливье", "олів'є", "Olivier salad", [], ["Q15180"]),
    ("Q90000005", "плов", "плов", "плов", "pilaf", ["TJ", "UZ"], []),
    ("Q90000006", "хачапури", "хачапури", "хачапурі", "khachapuri", ["GE"], []),
    ("Q90000008", "тартифлет", "тартифлет", "тартифлет", "tartiflette", ["FR"], []),
]


def test_the_papers_query_gives_the_expected_candidates(endpoint, tmp_path: Path) -> None:
    """Dishes through P31/P279* (one and two steps), not the branded food; every ISO origin;
    the origin without P297 listed apart; labels missing in a language are null; an item is
    returned only with a label in the asked language."""
    from culturebench.datasets.borsch.wikidata import render_query

    record = _fetch(endpoint, tmp_path / "ru")
    assert _table(tmp_path / "ru") == RU
    assert record["rows"] == 7 and record["with_origin"] == 6 and record["pages"] == 1
    uk = _fetch(endpoint, tmp_path / "uk", "uk")
    assert [r[0] for r in _table(tmp_path / "uk")] == [q for q, *_ in RU if q != "Q90000003"]  # no uk label
    _fetch(endpoint, tmp_path / "en", "en")
    en = _table(tmp_path / "en")
    assert [r[0] for r in en] == [*(q for q, *_ in RU), "Q90000009"]
    assert en[-1][1:] == ("Cornish pasty", None, None, "Cornish pasty", [], ["Q21"])
    rows = pq.read_table(tmp_path / "uk" / "candidates.parquet").to_pylist()
    assert {r["provenance"] for r in rows} == {"wikidata"} and {r["label_lang"] for r in rows} == {"uk"}
    assert {r["query_sha256"] for r in rows} == {uk["query_sha256"]} != {record["query_sha256"]}
    query = render_query("ru")
    assert "(wdt:P31/(wdt:P279*)) wd:Q746549" in query and "wdt:P495" in query and "wdt:P297" in query
    assert '"ru"' in query and "$" not in query and "query-version" not in query  # comments left out


def test_pages_cache_and_refresh(endpoint, servers, tmp_path: Path) -> None:
    """LIMIT/OFFSET pages give the same table; a second run reads the cache (no request, same
    retrieval time); --refresh asks again. The User-Agent says who is asking."""
    cache = tmp_path / "cache"
    with servers.sparql_proxy(endpoint) as proxy:
        url = f"http://127.0.0.1:{proxy.server_port}/query"
        first = _fetch(url, tmp_path / "a", page_size=3, cache_dir=cache, contact="maintainer@example.org")
        assert first["pages"] == 3 and first["requests"] == 3 and len(proxy.seen) == 3  # 3 + 3 + 1 rows
        assert all("culturebench/" in s["user_agent"] and "maintainer@example.org" in s["user_agent"]
                   for s in proxy.seen)  # fmt: skip
        again = _fetch(url, tmp_path / "b", page_size=3, cache_dir=cache)
        assert again["pages_from_cache"] == 3 and again["requests"] == 0 and len(proxy.seen) == 3
        assert again["retrieved_at"] == first["retrieved_at"]
        fresh = _fetch(url, tmp_path / "c", page_size=3, cache_dir=cache, refresh=True)
        assert fresh["requests"] == 3 and len(proxy.seen) == 6
    _fetch(endpoint, tmp_path / "whole", page_size=1000)
    assert _table(tmp_path / "a") == _table(tmp_path / "b") == _table(tmp_path / "whole") == RU


def test_retries_honour_retry_after_then_back_off(endpoint, servers, tmp_path: Path) -> None:
    waits: list[float] = []
    with servers.sparql_proxy(endpoint, ["429:7", "503", "forward"]) as proxy:
        url = f"http://127.0.0.1:{proxy.server_port}/query"
        record = _fetch(url, tmp_path / "out", backoff=0.5, sleep=waits.append)
    assert waits == [7.0, 1.0]  # Retry-After first; then the backoff, doubled once
    assert record["requests"] == 3 and _table(tmp_path / "out") == RU


@pytest.mark.parametrize(
    ("script", "options", "message"),
    [
        (["garbage"], {}, "offset 0): malformed SPARQL JSON response"),
        (["nobindings"], {}, "malformed SPARQL JSON response (no head, results.bindings)"),
        (["429:1", "429:1"], {"retries": 1}, "HTTP 429 Too Many Requests (after 2 tries)"),
        (["sleep:3", "sleep:3"], {"retries": 1, "timeout": 1}, "timed out after 1 s (after 2 tries)"),
    ],
)
def test_endpoint_failures_are_one_line_errors(endpoint, servers, tmp_path, script, options, message) -> None:
    from culturebench.sparql import SparqlError

    with servers.sparql_proxy(endpoint, script) as proxy:
        url = f"http://127.0.0.1:{proxy.server_port}/query"
        with pytest.raises(SparqlError) as caught:
            _fetch(url, tmp_path / "out", sleep=lambda s: None, **options)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_bad_endpoints(endpoint, servers, tmp_path: Path) -> None:
    from culturebench.errors import UsageError
    from culturebench.sparql import SparqlError

    nothing = f"http://127.0.0.1:{servers.free_port()}/query"
    with pytest.raises(SparqlError, match="cannot connect"):
        _fetch(nothing, tmp_path / "a")
    with pytest.raises(SparqlError, match="HTTP 404"):
        _fetch(endpoint.replace("/query", "/no-such-path"), tmp_path / "b")
    for bad in ("ftp://127.0.0.1/query", "query.wikidata.org/sparql", "http://user:pw@127.0.0.1/q"):
        with pytest.raises(UsageError, match="--endpoint"):
            _fetch(bad, tmp_path / "c")
    assert not any((tmp_path / n).exists() for n in "abc")


def test_cli_candidates_then_the_refresh_diff(endpoint, borsch_release, tmp_path: Path) -> None:
    """The diff against the real BORSCH release: names compared normalised, origins as sets;
    dishes from Wikidata in the release that the query no longer returns are listed."""
    runner = CliRunner()
    out = tmp_path / "ru"
    args = ["--endpoint", endpoint, "--lang", "ru", "--out", str(out), "--no-cache", "--allow", "127.0.0.1"]
    result = runner.invoke(app, ["borsch", "wikidata", *args])
    assert result.exit_code == 0, result.output
    assert "7 candidates (6 with an ISO origin)" in " ".join(result.output.split())
    report = tmp_path / "diff"
    result = runner.invoke(
        app,
        ["borsch", "wikidata-diff", str(out), "--local", str(borsch_release.folder), "--out", str(report)],
    )
    assert result.exit_code == 0, result.output
    diff = json.loads((report / "wikidata_diff.json").read_text(encoding="utf-8"))
    assert diff["counts"]["same"] == 4  # дакос, джолоф, плов; хачапури (a bootstrapped row)
    assert [
        (d["name"], d["added"], d["removed"], d["wikidata_origins_without_iso"])
        for d in diff["origins_differ"]
    ] == [
        ("БУЙАБЕС", ["MC"], [], []),
        ("ОЛИВЬЕ", [], ["RU"], ["Q15180"]),
    ]
    assert [(n["qid"], n["label"], n["post_soviet"]) for n in diff["new"]] == [
        ("Q90000008", "тартифлет", False)
    ]
    rows = pq.read_table(next((borsch_release.folder / "data" / "ru").glob("*.parquet"))).to_pylist()
    labels = {r[1] for r in RU}
    expected = sorted(
        r["id"] for r in rows if r["provenance"] == "wikidata" and r["name_normalized"] not in labels
    )
    assert sorted(r["id"] for r in diff["not_returned"]) == expected and len(expected) > 600
    assert diff["release"]["manifest_sha256"] and diff["candidates"]["query_version"] == "1"
    markdown = (report / "wikidata_diff.md").read_text(encoding="utf-8")
    assert (
        "Nothing in this report changes a release" in markdown
        and "| ru-8 | БУЙАБЕС | Q90000003 | FR | FR, MC | MC |" in markdown
    )
    # wrong input: one line, exit 2, nothing written
    for args in (
        ["borsch", "wikidata", "--endpoint", endpoint, "--lang", "de", "--out", str(tmp_path / "x")],
        ["borsch", "wikidata", "--endpoint", endpoint, "--lang", "ru", "--out", str(out), "--no-cache",
         "--allow", "127.0.0.1"],
        ["borsch", "wikidata-diff", str(tmp_path / "missing"), "--local", str(borsch_release.folder),
         "--out", str(tmp_path / "y")],
    ):  # fmt: skip
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and len(result.output.strip().splitlines()) <= 2, result.output
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


@pytest.mark.parametrize("flag", ["--cache-dir", "--cache"])
def test_cli_cache_dir_and_its_deprecated_spelling(endpoint, tmp_path: Path, flag: str) -> None:
    """`--cache-dir DIR` keeps the answers in DIR (a second run reads them: no page asked);
    `--cache DIR`, its old spelling (docs/commands.md#option-names), still does, with one
    deprecation line."""
    from culturebench.cli.options import deprecation_line

    cache = tmp_path / "answers"
    runner = CliRunner()
    args = [
        "borsch",
        "wikidata",
        "--endpoint",
        endpoint,
        "--lang",
        "ru",
        flag,
        str(cache),
        "--allow",
        "127.0.0.1",
    ]
    first = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
    assert first.exit_code == 0, first.output
    assert any(cache.rglob("*")), "the answers were not kept in the given folder"
    second = runner.invoke(app, [*args, "--out", str(tmp_path / "b")])
    assert second.exit_code == 0 and "1 page(s), 1 from the cache" in " ".join(second.output.split())
    warned = first.output.count(deprecation_line("--cache", "--cache-dir"))
    assert warned == (1 if flag == "--cache" else 0), first.output
