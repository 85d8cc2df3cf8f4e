"""Word statistics for short texts."""
import re
from collections import Counter

_WORD = re.compile(r"[a-z']+")
STOPWORDS = frozenset({"a", "an", "the", "and", "or", "of", "to", "in", "is"})


def words(text):
    """Lower-cased words of `text`, punctuation removed."""
    return _WORD.findall(text.lower())


def word_count(text, skip_stopwords=False):
    count = 0
    for word in words(text):
        if skip_stopwords and word in STOPWORDS:
            continue
        count += 1
    return count


def top_words(text, n=3):
    counts = Counter(w for w in words(text) if w not in STOPWORDS)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [word for word, _ in ranked[:n]]


def longest_run(text):
    """The longest run of consecutive words that each start with the same letter."""
    best, run, prev = [], [], None
    for word in words(text):
        if prev is not None and word[0] == prev:
            run.append(word)
        else:
            run = [word]
        prev = word[0]
        if len(run) > len(best):
            best = list(run)
    return best
