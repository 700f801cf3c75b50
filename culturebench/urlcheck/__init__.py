"""Scheduled URL-integrity checks for the datasets' external links (images, recipes, pages)."""

from culturebench.urlcheck.checker import CheckConfig, UrlChecker, UrlResult
from culturebench.urlcheck.collect import UrlItem, collect_urls

__all__ = ["CheckConfig", "UrlChecker", "UrlItem", "UrlResult", "collect_urls"]
