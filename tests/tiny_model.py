"""Re-export of the package's tiny local model builders for the test fixtures."""

from culturebench.eval.tiny import build_tiny_llama, build_tiny_llava

__all__ = ["build_tiny_llama", "build_tiny_llava"]
