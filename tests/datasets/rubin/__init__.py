"""Tests: datasets/rubin."""
