"""Tests: probes."""
