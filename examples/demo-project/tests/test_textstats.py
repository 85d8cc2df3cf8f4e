import unittest

import textstats


class TextStatsTest(unittest.TestCase):
    def test_word_count(self):
        self.assertEqual(textstats.word_count("The cat and the hat."), 5)
        self.assertEqual(textstats.word_count("The cat and the hat.", skip_stopwords=True), 2)

    def test_top_words(self):
        text = "red fish blue fish, old fish new fish, red red"
        self.assertEqual(textstats.top_words(text), ["fish", "red", "blue"])
        self.assertEqual(textstats.top_words(text, n=1), ["fish"])

    def test_longest_run(self):
        self.assertEqual(textstats.longest_run("big brown bears bite apples"), ["big", "brown", "bears", "bite"])
        self.assertEqual(textstats.longest_run(""), [])
