"""Tests: datasets/foodieqa."""
