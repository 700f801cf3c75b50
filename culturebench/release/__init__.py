"""Releases: version policy, the release gate, and publish targets (Hub, local git)."""

from culturebench.release.pipeline import ReleasePlan, plan_release, publish_release
from culturebench.release.versioning import Version

__all__ = ["ReleasePlan", "Version", "plan_release", "publish_release"]
