"""Tests: datasets/borsch."""
