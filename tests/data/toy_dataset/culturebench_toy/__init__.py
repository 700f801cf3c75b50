"""A toy third-party dataset for culturebench (used by tests/test_toy_dataset.py)."""
