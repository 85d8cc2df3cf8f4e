"""Closed integer intervals given as (start, end) pairs."""


def merge(intervals):
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1] + 1:
            last_start, last_end = merged[-1]
            merged[-1] = (last_start, max(last_end, end))
        else:
            merged.append((start, end))
    return merged


def covered(intervals):
    total = 0
    for start, end in merge(intervals):
        total += end - start + 1
    return total


def first_gap(intervals, lower, upper):
    """The first integer in [lower, upper] not covered, or None."""
    candidate = lower
    for start, end in merge(intervals):
        if start > candidate:
            break
        if end >= candidate:
            candidate = end + 1
    return candidate if candidate <= upper else None
