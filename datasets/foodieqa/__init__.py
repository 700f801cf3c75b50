"""foodieqa: declarations and code of one dataset (see dataset.yaml)."""
