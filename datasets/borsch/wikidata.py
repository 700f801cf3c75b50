"""The Wikidata stage of BORSCH (§3.1, App. L): food dishes with their countries of origin,
fetched with the paper's query (``wikidata_dishes.rq``, versioned beside this file), and a
refresh diff of those candidates against a release for a maintainer to review.

Nothing here changes a release: the candidates and the diff are written to their own folder;
a maintainer reads the diff, edits the upstream tables and cuts a minor release.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from string import Template
from typing import Any

from culturebench.errors import CultureBenchError, UsageError
from culturebench.outputs import OutputKind
from culturebench.sparql import MAX_BYTES, MAX_PAGES, MAX_ROWS
from culturebench.text import md_row

QUERY_FILE = Path(__file__).with_name("wikidata_dishes.rq")
LANGS = ("ru", "uk", "en")
CANDIDATES = "candidates.parquet"
PROVENANCE = "wikidata.json"
ENTITY = "http://www.wikidata.org/entity/"
DEFAULT_CONTACT = "https://github.com/culturebench/culturebench"
DEFAULT_ENDPOINT = "https://query.wikidata.org/sparql"


def query_text() -> str:
    """The versioned query template, as shipped."""
    return QUERY_FILE.read_text(encoding="utf-8")


def query_version(text: str | None = None) -> str:
    """The ``# query-version: N`` line of the template."""
    match = re.search(r"^# query-version:\s*(\S+)", text or query_text(), re.MULTILINE)
    if not match:
        raise CultureBenchError(f"{QUERY_FILE}: no '# query-version:' line")
    return match.group(1)


def render_query(lang: str) -> str:
    """The query for one label language (ru, uk or en), as sent: the template's comment lines
    left out (the query sent stays the query text itself; clients that guess the query type
    from the text, as SPARQLWrapper did, misread words in consecutive comment lines)."""
    if lang not in LANGS:
        raise UsageError(f"--lang {lang!r}: expected one of {', '.join(LANGS)}")
    lines = [line for line in query_text().splitlines() if not line.lstrip().startswith("#")]
    return Template("\n".join(lines) + "\n").substitute(lang=lang)


def user_agent(contact: str) -> str:
    """A descriptive User-Agent, as Wikidata's policy asks: tool, version, purpose, contact
    (and the HTTP library the client sends with)."""
    import requests

    from culturebench import __version__

    tool = f"culturebench/{__version__}"
    return f"{tool} (BORSCH Wikidata stage; {contact}) python-requests/{requests.__version__}"


def fetch_candidates(
    endpoint: str,
    lang: str,
    out: Path,
    *,
    cache_dir: Path | None,
    refresh: bool = False,
    page_size: int = 10_000,
    timeout: float = 60.0,
    retries: int = 4,
    backoff: float = 2.0,
    contact: str = DEFAULT_CONTACT,
    overwrite: bool = False,
    sleep: Callable[[float], None] | None = None,
    progress: Callable[[int], None] | None = None,
    allow: tuple[str, ...] | list[str] = (),
    max_bytes: int = MAX_BYTES,
    max_pages: int = MAX_PAGES,
    max_rows: int = MAX_ROWS,
) -> dict[str, Any]:
    """Run the query page by page and write ``out/candidates.parquet`` plus ``out/wikidata.json``
    (provenance) into a staging folder renamed into place; return the provenance. ``allow``
    names the non-public addresses the client may contact (a local endpoint); ``max_bytes``
    bounds one answer, ``max_pages`` and ``max_rows`` the whole query."""
    from datetime import UTC, datetime

    from culturebench.outputs import claimed_output

    with claimed_output(out, CANDIDATES_OUTPUT, overwrite=overwrite):  # checked and locked before any query
        from culturebench.safe_http import redact
        from culturebench.sparql import SparqlClient

        query = render_query(lang)
        sha = hashlib.sha256(query.encode("utf-8")).hexdigest()
        options: dict[str, Any] = {
            "timeout": timeout,
            "retries": retries,
            "backoff": backoff,
            "allow": tuple(allow),
            "max_bytes": max_bytes,
            "max_pages": max_pages,
            "max_rows": max_rows,
        }
        if sleep is not None:
            options["sleep"] = sleep
        client = SparqlClient(endpoint, user_agent(contact), cache_dir=cache_dir, refresh=refresh, **options)
        rows: list[dict[str, Any]] = []
        pages = cached = 0
        for page in client.select_pages(query, page_size):
            pages += 1
            cached += page.cached
            for number, binding in enumerate(page.rows, start=len(rows) + 1):
                rows.append(_candidate(binding, number, endpoint, lang, page.retrieved_at, sha))
            if progress:
                progress(len(rows))
        rows.sort(key=lambda r: _qid_number(r["qid"]))
        record = {
            "stage": "borsch-wikidata",
            "endpoint": redact(endpoint),
            "lang": lang,
            "query_file": QUERY_FILE.name,
            "query_version": query_version(),
            "query_sha256": sha,
            "page_size": page_size,
            "pages": pages,
            "pages_from_cache": cached,
            "requests": client.requests,
            "rows": len(rows),
            "with_origin": sum(bool(r["origins"]) for r in rows),
            "retrieved_at": min((r["retrieved_at"] for r in rows), default=None),
            "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "user_agent": user_agent(contact),
        }
        _write(out, rows, record, overwrite)
        return record


def _candidate(
    binding: dict[str, str], number: int, endpoint: str, lang: str, retrieved_at: str, sha: str
) -> dict[str, Any]:
    from culturebench.safe_http import redact
    from culturebench.sparql import SparqlError

    fid = binding.get("fid", "")
    if not fid.startswith(ENTITY) or not re.fullmatch(r"Q\d+", fid[len(ENTITY) :]):
        raise SparqlError(f"{redact(endpoint)}: row {number}: fid {fid!r} is not a Wikidata item IRI")
    if not binding.get("food"):
        raise SparqlError(f"{redact(endpoint)}: row {number} ({fid}): no label")
    codes = sorted({c.strip() for c in binding.get("countryOfOriginList", "").split(",") if c.strip()})
    without = sorted(
        {
            o.strip().removeprefix(ENTITY)
            for o in binding.get("originsWithoutCode", "").split(",")
            if o.strip()
        },
        key=_qid_number,
    )
    return {
        "qid": fid[len(ENTITY) :],
        "label": binding["food"],
        "label_lang": lang,
        "label_ru": binding.get("label_ru"),
        "label_uk": binding.get("label_uk"),
        "label_en": binding.get("label_en"),
        "origins": codes,
        "origins_without_iso": without,
        "provenance": "wikidata",
        "retrieved_at": retrieved_at,
        "query_sha256": sha,
    }


def _qid_number(qid: str) -> tuple[int, str]:
    digits = qid.removeprefix(ENTITY).lstrip("Q")
    return (int(digits), "") if digits.isdigit() else (-1, qid)


def _write(out: Path, rows: list[dict[str, Any]], record: dict[str, Any], overwrite: bool) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from culturebench.outputs import staged_output

    out = Path(out)
    schema = pa.schema(
        [
            ("qid", pa.string()),
            ("label", pa.string()),
            ("label_lang", pa.string()),
            ("label_ru", pa.string()),
            ("label_uk", pa.string()),
            ("label_en", pa.string()),
            ("origins", pa.list_(pa.string())),
            ("origins_without_iso", pa.list_(pa.string())),
            ("provenance", pa.string()),
            ("retrieved_at", pa.string()),
            ("query_sha256", pa.string()),
        ]
    )
    with staged_output(out, CANDIDATES_OUTPUT, overwrite=overwrite) as staged:
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), staged / CANDIDATES)
        (staged / PROVENANCE).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", "utf-8")


CANDIDATES_OUTPUT = OutputKind("borsch-wikidata", (CANDIDATES, PROVENANCE))
DIFF_OUTPUT = OutputKind("borsch-wikidata-diff", ("wikidata_diff.json",))


def read_candidates(folder: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The candidate table and its provenance, as written by :func:`fetch_candidates`."""
    import pyarrow.parquet as pq

    folder = Path(folder)
    try:
        record = json.loads((folder / PROVENANCE).read_text(encoding="utf-8"))
        rows = pq.read_table(folder / CANDIDATES).to_pylist()
    except (OSError, ValueError, RecursionError) as exc:
        raise CultureBenchError(
            f"{folder}: not a `borsch wikidata` output ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(record, dict) or record.get("stage") != "borsch-wikidata":
        raise CultureBenchError(f"{folder / PROVENANCE}: not a `borsch wikidata` output")
    return rows, record


# ---------------------------------------------------------------------- refresh diff
def refresh_diff(
    candidates: list[dict[str, Any]],
    record: dict[str, Any],
    release_rows: list[dict[str, Any]],
    release: dict,
) -> dict[str, Any]:
    """Compare Wikidata candidates with a release's rows of the same language, by normalised
    name (the release's ``name_normalized`` against the candidate's label, normalised alike):

    - ``new``: candidates no release row is named like;
    - ``origins_differ``: named like a release row, with another set of ISO origins;
    - ``not_returned``: release rows that came from Wikidata (provenance ``wikidata``) that no
      candidate is named like any more;
    - ``ambiguous``: release names matched by several candidates (homonyms), left unjudged;
    - ``same``: the count of matched rows whose origins agree.
    """
    from culturebench.datasets.borsch.tasks import POST_SOVIET
    from culturebench.text import normalize_name

    by_name: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for cand in candidates:
        by_name[normalize_name(cand["label"])].append(cand)
    release_names = {r["name_normalized"] for r in release_rows}
    new = [
        _brief(c, POST_SOVIET)
        for name, cands in sorted(by_name.items())
        if name not in release_names
        for c in cands
    ]
    differ, ambiguous, not_returned = [], [], []
    same = 0
    for row in release_rows:
        cands = by_name.get(row["name_normalized"], [])
        if not cands:
            if row.get("provenance") == "wikidata":
                not_returned.append(
                    {"id": row["id"], "name": row["name"], "origins": list(row["origins"] or [])}
                )
            continue
        if len(cands) > 1:
            ambiguous.append({"id": row["id"], "name": row["name"], "qids": [c["qid"] for c in cands]})
            continue
        cand = cands[0]
        ours, theirs = set(row["origins"] or []), set(cand["origins"])
        if ours == theirs:
            same += 1
            continue
        differ.append(
            {
                "id": row["id"],
                "name": row["name"],
                "provenance": row.get("provenance"),
                "qid": cand["qid"],
                "release_origins": list(row["origins"] or []),
                "wikidata_origins": cand["origins"],
                "added": sorted(theirs - ours),
                "removed": sorted(ours - theirs),
                "wikidata_origins_without_iso": cand["origins_without_iso"],
            }
        )
    return {
        "release": release,
        "candidates": {
            k: record.get(k)
            for k in ("endpoint", "lang", "query_version", "query_sha256", "retrieved_at", "rows")
        },
        "counts": {
            "candidates": len(candidates),
            "release_rows": len(release_rows),
            "same": same,
            "origins_differ": len(differ),
            "new": len(new),
            "new_post_soviet": sum(c["post_soviet"] for c in new),
            "not_returned": len(not_returned),
            "ambiguous": len(ambiguous),
        },
        "origins_differ": differ,
        "new": new,
        "not_returned": not_returned,
        "ambiguous": ambiguous,
    }


def _brief(cand: dict[str, Any], post_soviet: tuple[str, ...]) -> dict[str, Any]:
    return {
        "qid": cand["qid"],
        "label": cand["label"],
        "origins": cand["origins"],
        "origins_without_iso": cand["origins_without_iso"],
        "post_soviet": any(c in post_soviet for c in cand["origins"]),
    }


def diff_markdown(diff: dict[str, Any]) -> str:
    """The diff as a review document."""
    c, rel, cand = diff["counts"], diff["release"], diff["candidates"]
    lines = [
        f"# BORSCH Wikidata refresh: {cand['lang']} candidates vs release {rel.get('version')}",
        "",
        "Nothing in this report changes a release. Review each section; accepted changes go into",
        "the upstream tables and ship as a minor release with a CHANGELOG entry.",
        "",
        f"- Release: {rel.get('name')} {rel.get('version')} (config `{rel.get('config')}`, "
        f"manifest sha256 `{rel.get('manifest_sha256')}`)",
        f"- Candidates: {cand['rows']} items from {cand['endpoint']}, retrieved {cand['retrieved_at']}, "
        f"query version {cand['query_version']} (sha256 `{cand['query_sha256']}`)",
        f"- Matched with the same origins: {c['same']}; origins differ: {c['origins_differ']}; "
        f"new on Wikidata: {c['new']} ({c['new_post_soviet']} with a post-Soviet origin); "
        f"no longer returned: {c['not_returned']}; ambiguous names: {c['ambiguous']}",
        "",
        f"## Origins differ ({c['origins_differ']})",
        "",
        "| id | name | QID | release | Wikidata | added | removed | origins without ISO code |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for d in diff["origins_differ"]:
        lines.append(
            md_row([d["id"], d["name"], d["qid"], _codes(d["release_origins"]), _codes(d["wikidata_origins"]),
                    _codes(d["added"]), _codes(d["removed"]), _codes(d["wikidata_origins_without_iso"])])
        )  # fmt: skip
    lines += [
        "",
        f"## New on Wikidata ({c['new']})",
        "",
        "| QID | label | origins | post-Soviet |",
        "| --- | --- | --- | --- |",
    ]
    for n in diff["new"]:
        origins = _codes(n["origins"]) + (
            f" (+ {_codes(n['origins_without_iso'])} without ISO code)" if n["origins_without_iso"] else ""
        )
        lines.append(md_row([n["qid"], n["label"], origins, "yes" if n["post_soviet"] else ""]))
    lines += [
        "",
        f"## From Wikidata in the release, no longer returned ({c['not_returned']})",
        "",
        "| id | name | origins |",
        "| --- | --- | --- |",
    ]
    for r in diff["not_returned"]:
        lines.append(md_row([r["id"], r["name"], _codes(r["origins"])]))
    lines += ["", f"## Ambiguous names ({c['ambiguous']})", "", "| id | name | QIDs |", "| --- | --- | --- |"]
    for a in diff["ambiguous"]:
        lines.append(md_row([a["id"], a["name"], ", ".join(a["qids"])]))
    return "\n".join(lines) + "\n"


def _codes(codes: list[str]) -> str:
    return ", ".join(codes) if codes else "-"


def refresh_report(
    candidates_dir: Path,
    out: Path,
    *,
    local: str | None,
    revision: str | None,
    repo: str | None,
    overwrite: bool = False,
) -> dict[str, int]:
    """Read a candidate folder and a release (local folder or pinned Hub revision), diff them
    and write the report; return the counts."""

    from culturebench.eval.dataset_ref import load_rows, resolve_dataset
    from culturebench.outputs import check_output

    check_output(out, DIFF_OUTPUT, overwrite=overwrite)  # before reading anything
    candidates, record = read_candidates(candidates_dir)
    lang = record.get("lang")
    if lang not in ("ru", "uk"):
        raise UsageError(
            f"{candidates_dir}: {lang!r} candidates; BORSCH releases name dishes in ru and uk only "
            "(the English set is for the Fig. 7 comparison, not a release config)"
        )
    ref = resolve_dataset("borsch", revision=revision, local=local, repo=repo)
    rows = load_rows(ref, lang, "test", None)
    release = {"name": "borsch", "config": lang, **ref.to_pin()}
    diff = refresh_diff(candidates, record, rows, release)
    write_diff(diff, out, overwrite=overwrite)
    return diff["counts"]


def write_diff(diff: dict[str, Any], out: Path, *, overwrite: bool = False) -> list[Path]:
    """``out/wikidata_diff.json`` and ``out/wikidata_diff.md``, written together (staged)."""
    from culturebench.outputs import staged_output

    out = Path(out)
    with staged_output(out, DIFF_OUTPUT, overwrite=overwrite) as staged:
        (staged / "wikidata_diff.json").write_text(
            json.dumps(diff, indent=2, ensure_ascii=False) + "\n", "utf-8"
        )
        (staged / "wikidata_diff.md").write_text(diff_markdown(diff), "utf-8")
    return [out / "wikidata_diff.json", out / "wikidata_diff.md"]
