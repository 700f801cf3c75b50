"""Tests: datasets/ash."""
