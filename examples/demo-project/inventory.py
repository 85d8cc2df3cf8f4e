"""A tiny stock keeper: plain dicts in, plain dicts out (plus one class)."""
from textstats import words


def restock(stock, threshold=5, batch=10):
    """Items at or below `threshold` get `batch` more; returns the new stock."""
    updated = {}
    for item, quantity in sorted(stock.items()):
        if quantity <= threshold:
            quantity += batch
        updated[item] = quantity
    return updated


def low_items(stock, threshold=5):
    return sorted(item for item, quantity in stock.items() if quantity <= threshold)


def tag_items(description):
    """Uses a sibling module's function: the harvested sample carries its definition."""
    return sorted(set(words(description)))


class Ledger:
    """A method of a fresh instance is harvested as `Ledger().record(...)`."""

    def __init__(self):
        self.entries = []

    def record(self, item, delta):
        self.entries.append((item, delta))
        return len(self.entries)
