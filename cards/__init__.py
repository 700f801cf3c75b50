"""Dataset card (Hub README with YAML header + datasheet) and Croissant generation."""

from culturebench.cards.card import render_card, size_category
from culturebench.cards.croissant import build_croissant
from culturebench.cards.write import write_card_files

__all__ = ["build_croissant", "render_card", "size_category", "write_card_files"]
