"""The SSRF guard used by the URL checker; it lives in :mod:`culturebench.safe_http`, shared
with the image stage, and is re-exported here for existing imports."""

from culturebench.safe_http import BlockedAddress, check_target, check_url, is_public, parse_allow

__all__ = ["BlockedAddress", "check_target", "check_url", "is_public", "parse_allow"]
