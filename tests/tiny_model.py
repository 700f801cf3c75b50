"""Re-export of the package's tiny local model builders for the test fixtures."""

from culturebench.eval.tiny import (
    build_tiny_clip,
    build_tiny_dinov2,
    build_tiny_llama,
    build_tiny_llava,
    build_tiny_sd,
)

__all__ = ["build_tiny_clip", "build_tiny_dinov2", "build_tiny_llama", "build_tiny_llava", "build_tiny_sd"]
