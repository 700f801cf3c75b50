"""Builders: code that turns upstream sources into a versioned release folder."""

from culturebench.builders.base import BuildResult, DatasetBuilder, get_builder

__all__ = ["BuildResult", "DatasetBuilder", "get_builder"]
