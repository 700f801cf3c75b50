"""Croissant 1.1 (JSON-LD) metadata for a release folder, with RAI fields.

Every Parquet file is a ``cr:FileObject`` with its sha256 (several shards of one split
become a ``cr:FileSet``); every config is a ``cr:RecordSet`` whose fields extract the
Parquet columns. Lists are ``isArray`` fields; the list of image records is an array field
with one sub-field per struct member.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from culturebench.spec import DatasetSpec

CONFORMS_TO = "http://mlcommons.org/croissant/1.1"
PARQUET = "application/x-parquet"
DTYPES = {
    "string": "sc:Text",
    "large_string": "sc:Text",
    "int8": "sc:Integer",
    "int16": "sc:Integer",
    "int32": "sc:Integer",
    "int64": "sc:Integer",
    "float32": "sc:Float",
    "float64": "sc:Float",
    "bool": "sc:Boolean",
    "image": "sc:ImageObject",
}
LICENSE_URLS = {
    "mit": "https://opensource.org/license/mit",
    "cc-by-4.0": "https://creativecommons.org/licenses/by/4.0/",
    "cc-by-nc-4.0": "https://creativecommons.org/licenses/by-nc/4.0/",
    "cc-by-nc-nd-4.0": "https://creativecommons.org/licenses/by-nc-nd/4.0/",
}


@lru_cache(maxsize=1)
def croissant_context() -> dict[str, Any]:
    """The JSON-LD ``@context`` that the installed mlcroissant writes for Croissant 1.1."""
    import mlcroissant as mlc

    meta = mlc.Metadata(name="context", url="https://example.org", conforms_to=CONFORMS_TO)
    return meta.to_json()["@context"]


def _answers(spec: DatasetSpec, section: str) -> str:
    items = spec.datasheet.get(section, [])
    return " ".join(f"{item['q']} {str(item['a']).strip()}" for item in items)


#: Croissant RAI properties a datasheet item can answer, named by its ``rai:`` key.
RAI_TAGS = (
    "dataAnnotationProtocol",
    "dataBiases",
    "dataLimitations",
    "dataUseCases",
    "personalSensitiveInformation",
    "dataCollectionMissingData",
)


def _tagged(spec: DatasetSpec, tag: str) -> str:
    """The answers of every datasheet item marked ``rai: <tag>``, in datasheet order."""
    answers = []
    for section, items in spec.datasheet.items():
        for item in items or []:
            if item.get("rai") is None:
                continue
            if item["rai"] not in RAI_TAGS:
                raise ValueError(
                    f"{spec.folder / 'datasheet.yaml'}: {section}: unknown rai tag {item['rai']!r} "
                    f"(known: {', '.join(RAI_TAGS)})"
                )
            if item["rai"] == tag:
                answers.append(str(item["a"]).strip())
    return " ".join(answers)


def _rai(spec: DatasetSpec, manifest: dict[str, Any]) -> dict[str, Any]:
    """RAI fields mapped by field, never by position: whole datasheet sections for
    collection, preprocessing and maintenance; the items tagged ``rai: <field>`` for the
    rest. A field no item answers is left out rather than filled with another answer."""
    out = {
        "rai:dataCollection": _answers(spec, "collection"),
        "rai:dataPreprocessingProtocol": _answers(spec, "preprocessing"),
        "rai:dataReleaseMaintenancePlan": _answers(spec, "maintenance"),
        **{f"rai:{tag}": _tagged(spec, tag) for tag in RAI_TAGS},
        "rai:dataCollectionRawData": manifest["upstream"].get("repo", ""),
    }
    return {key: value for key, value in out.items() if value}


def _field(
    record_set: str, feature: dict[str, Any], source: dict[str, Any], docs: dict[str, str]
) -> dict[str, Any]:
    name = feature["name"]
    fid = f"{record_set}/{name}"
    out: dict[str, Any] = {"@type": "cr:Field", "@id": fid, "name": name}
    if name in docs:
        out["description"] = docs[name]
    extract = {"column": name}
    if "dtype" in feature:
        dtype = feature["dtype"]
        if isinstance(dtype, dict) and "class_label" in dtype:  # stored as the class index
            names = dtype["class_label"].get("names", {})
            out["dataType"] = "sc:Integer"
            out["description"] = (
                out.get("description", "")
                + " Class index: "
                + ", ".join(f"{k}={v}" for k, v in names.items())
            ).strip()
            out["source"] = {**source, "extract": extract}
            return out
        out["dataType"] = DTYPES.get(dtype, "sc:Text")
        out["source"] = {**source, "extract": extract}
        if dtype == "image":
            out["source"]["transform"] = {"jsonPath": "bytes"}
        return out
    inner = feature.get("list")
    out["isArray"] = True
    out["arrayShape"] = "-1"
    if isinstance(inner, str):
        out["dataType"] = DTYPES.get(inner, "sc:Text")
        out["source"] = {**source, "extract": extract}
        return out
    # A list of structs: one array sub-field per member, read from the same column.
    out["dataType"] = "cr:RecordSet"
    out["subField"] = []
    if not isinstance(inner, list):
        raise ValueError(f"feature {name!r}: neither a dtype nor a list of them")
    for member in inner:
        transforms = [{"jsonPath": member["name"]}]
        if member.get("dtype") == "image":
            transforms.append({"jsonPath": "bytes"})
        sub = {
            "@type": "cr:Field",
            "@id": f"{fid}/{member['name']}",
            "name": member["name"],
            "dataType": DTYPES.get(member.get("dtype", "string"), "sc:Text"),
            "isArray": True,
            "arrayShape": "-1",
            # mlcroissant 1.1 casts list values element-wise only for `repeated` fields.
            "repeated": True,
            "source": {**source, "extract": extract, "transform": transforms},
        }
        out["subField"].append(sub)
    return out


def build_croissant(spec: DatasetSpec, manifest: dict[str, Any]) -> dict[str, Any]:
    """The Croissant JSON-LD document (a dict) for a release described by ``manifest``."""
    raw = spec.raw
    distribution: list[dict[str, Any]] = []
    record_sets: list[dict[str, Any]] = []
    docs = spec.field_docs
    for config, cfg in spec.configs.items():
        for split, info in manifest["configs"][config]["splits"].items():
            files = info["files"]
            if len(files) == 1:
                fid = files[0]["path"]
                distribution.append(
                    {
                        "@type": "cr:FileObject",
                        "@id": fid,
                        "name": fid,
                        "contentUrl": fid,
                        "contentSize": f"{files[0]['size']} B",
                        "encodingFormat": PARQUET,
                        "sha256": files[0]["sha256"],
                    }
                )
                source = {"fileObject": {"@id": fid}}
            else:
                fid = f"data/{config}/{split}"
                distribution.append(
                    {
                        "@type": "cr:FileSet",
                        "@id": fid,
                        "name": fid,
                        "encodingFormat": PARQUET,
                        "includes": f"data/{config}/{split}-*.parquet",
                    }
                )
                source = {"fileSet": {"@id": fid}}
            rs_id = config if len(manifest["configs"][config]["splits"]) == 1 else f"{config}_{split}"
            record_sets.append(
                {
                    "@type": "cr:RecordSet",
                    "@id": rs_id,
                    "name": rs_id,
                    "description": cfg.description,
                    "field": [_field(rs_id, feat, source, docs) for feat in cfg.features_yaml],
                }
            )
    license_id = raw.get("license", "")
    doc: dict[str, Any] = {
        "@context": croissant_context(),
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": spec.name,
        "alternateName": spec.pretty_name,
        "description": str(raw.get("summary", "")).strip(),
        "license": LICENSE_URLS.get(license_id, license_id),
        "url": raw.get("homepage", ""),
        "version": spec.version,
        "datePublished": spec.release_date(spec.version) or "",
        "citeAs": str(raw.get("citation", "")).strip(),
        "inLanguage": spec.languages,
        "keywords": raw.get("tags", []),
        "isLiveDataset": False,
        **_rai(spec, manifest),
        "distribution": distribution,
        "recordSet": record_sets,
    }
    return doc
