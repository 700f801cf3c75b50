#!/usr/bin/env bash
# The wheel, as a user installs it: build it from this checkout, install it (core only, its
# dependencies from the package index) into a new venv outside the checkout, and run the main
# job there: build BORSCH from the real upstream, validate it, load it with `datasets`. Every
# import must come from that venv, none from this checkout (a non-editable install that only
# works beside its sources is not an install). Usage: scripts/wheel_check.sh [PYTHON]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
python="${1:-$repo/.venv/bin/python}"
work="$(mktemp -d -t cb-wheel-XXXXXX)"
trap 'rm -rf "$work"' EXIT

echo "wheel check: building the wheel"
# from a copy of the files git would commit (tracked and new, not ignored): the checkout's own
# build/ and egg-info, stale or not, never reach the wheel, and nothing is written into it
mkdir "$work/src"
git -C "$repo" ls-files -z --cached --others --exclude-standard | (cd "$repo" && xargs -0 tar -cf - --ignore-failed-read) | tar -xf - -C "$work/src"
"$python" -m pip wheel -q --no-deps --no-build-isolation -w "$work/dist" "$work/src"
wheel="$(ls "$work"/dist/culturebench-*.whl)"
echo "wheel check: installing $(basename "$wheel") into a new venv"
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$wheel"

mkdir "$work/job" && cd "$work/job"
export CULTUREBENCH_UPSTREAM="$repo/../shared/upstream" PYTHONSAFEPATH=1 CULTUREBENCH_CACHE="$work/cache"
"$work/venv/bin/python" - "$work/venv" "$repo" <<'EOF'
import sys
from pathlib import Path

import culturebench.builders
import culturebench.cards
import culturebench.datasets
import culturebench.eval
import culturebench.validation

venv, repo = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
for module in ("culturebench", "culturebench.builders", "culturebench.validation", "culturebench.cards",
               "culturebench.eval"):
    where = Path(sys.modules[module].__file__).resolve()
    if venv not in where.parents or repo in where.parents:
        sys.exit(f"wheel check: {module} imported from {where}, not from the installed wheel")
print("wheel check: culturebench imported from", Path(sys.modules["culturebench"].__file__).parent)
EOF
"$work/venv/bin/culturebench" build borsch
"$work/venv/bin/culturebench" validate dist/borsch/1.0.0
"$work/venv/bin/python" -c '
from datasets import load_dataset
rows = load_dataset("dist/borsch/1.0.0", "parallel", split="test")
assert len(rows) > 0 and rows[0]["name_ru"], rows
print(f"wheel check: load_dataset read {len(rows)} parallel rows; the main job runs from the wheel")
'
