"""Tests: datasets/wwd."""
