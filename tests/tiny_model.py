"""Re-export of the package's tiny local model builder for the test fixtures."""

from culturebench.eval.tiny import build_tiny_llama

__all__ = ["build_tiny_llama"]
