import unittest

import inventory
import settings


class InventoryTest(unittest.TestCase):
    def test_restock(self):
        stock = {"apples": 3, "pears": 12, "plums": 5}
        self.assertEqual(inventory.restock(stock), {"apples": 13, "pears": 12, "plums": 15})
        self.assertEqual(inventory.restock(stock, threshold=3, batch=1), {"apples": 4, "pears": 12, "plums": 5})

    def test_low_items(self):
        self.assertEqual(inventory.low_items({"a": 1, "b": 9, "c": 5}), ["a", "c"])

    def test_tag_items(self):
        self.assertEqual(inventory.tag_items("Red apples and red pears"), ["and", "apples", "pears", "red"])

    def test_ledger(self):
        ledger = inventory.Ledger()
        self.assertEqual(ledger.record("apples", 3), 1)

    def test_settings(self):
        url = settings.database_url("localhost")
        self.assertEqual(settings.port_of(url), 5432)
