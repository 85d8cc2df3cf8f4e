import unittest

import intervals


class IntervalsTest(unittest.TestCase):
    def test_merge(self):
        self.assertEqual(intervals.merge([(5, 8), (1, 3), (4, 4), (10, 12)]), [(1, 8), (10, 12)])
        self.assertEqual(intervals.merge([]), [])

    def test_covered(self):
        self.assertEqual(intervals.covered([(1, 3), (2, 6), (9, 9)]), 7)

    def test_first_gap(self):
        self.assertEqual(intervals.first_gap([(1, 3), (5, 9)], 1, 10), 4)
        self.assertEqual(intervals.first_gap([(1, 10)], 1, 10), None)
        self.assertEqual(intervals.first_gap([(3, 4)], 1, 10), 1)
