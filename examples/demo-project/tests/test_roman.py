import unittest

import roman


class RomanTest(unittest.TestCase):
    def test_round_trip(self):
        for number in (1, 4, 9, 14, 40, 90, 400, 1994, 2024, 3999):
            self.assertEqual(roman.from_roman(roman.to_roman(number)), number)

    def test_known_values(self):
        self.assertEqual(roman.to_roman(1987), "MCMLXXXVII")
        self.assertEqual(roman.from_roman("xlii"), 42)

    def test_out_of_range(self):
        with self.assertRaises(ValueError):
            roman.to_roman(0)
