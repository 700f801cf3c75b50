"""Tests: datasets."""
