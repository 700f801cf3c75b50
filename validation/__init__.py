"""Release validation: pandera schemas per config, cross-field rules, card and Croissant
validity, manifest checksums. Blocking before a publish; also ``culturebench validate``."""

from culturebench.validation.findings import Finding, ValidationReport
from culturebench.validation.release import validate_release

__all__ = ["Finding", "ValidationReport", "validate_release"]
