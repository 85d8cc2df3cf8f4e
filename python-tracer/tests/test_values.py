"""Value capture (values.py): bounded reprs, type names, the literal flag,
children, and change fingerprints."""
from __future__ import annotations

import ast
import json
import math
import unittest
from collections import OrderedDict, deque

from execverify.values import Encoder, Fingerprints, type_name


def enc(v, **kw):
    return json.loads(Encoder(**kw).encode(v)[0])


class Reprs(unittest.TestCase):
    def test_small_values_are_exact_python_reprs(self):
        for v in [0, -7, 2 ** 80, 1.5, -0.0, "a'b\"c\n", b"\x00ab", True, None, 1 + 2j,
                  [1, "x", None], (1,), (), {"a": [1, 2]}, {1, 2}, set(), frozenset({3}), deque([1], maxlen=2),
                  [[1, [2, (3,)]], {"k": {"n": 1}}]]:
            with self.subTest(v=v):
                self.assertEqual(enc(v)["repr"], repr(v))

    def test_literal_flag_is_literal_eval_round_trip(self):
        for v in [1, "s", [1, (2, 3)], {"a": {1, 2}}, set(), b"x", None, -0.0, 1 + 2j]:
            with self.subTest(v=v):
                e = enc(v)
                self.assertTrue(e["literal"])
                got = set() if e["repr"] == "set()" else ast.literal_eval(e["repr"])
                self.assertEqual(got, v)
        for v in [float("nan"), float("inf"), [1.0, float("-inf")], frozenset({1}), deque([1]), range(3), object()]:
            with self.subTest(v=v):
                self.assertFalse(enc(v)["literal"])

    def test_type_names(self):
        class Local:
            pass
        self.assertEqual(enc(1)["type"], "int")
        self.assertEqual(enc(None)["type"], "NoneType")
        self.assertEqual(enc(OrderedDict())["type"], "collections.OrderedDict")
        self.assertEqual(type_name(Local), __name__ + ".Reprs.test_type_names.<locals>.Local")

    def test_subclasses_of_builtins_are_never_literal(self):
        class MyList(list):
            pass
        e = enc(MyList([1]))
        self.assertEqual((e["repr"], e["literal"]), ("[1]", False))

    def test_long_values_are_cut_and_marked(self):
        e = enc("x" * 5000, repr_chars=100)
        self.assertTrue(e["truncated"])
        self.assertFalse(e["literal"])
        self.assertEqual(e["len"], 5000)
        self.assertEqual(e["repr"], repr("x" * 5000)[:100] + "...")
        big = list(range(100000))
        e = enc(big, repr_chars=50)
        self.assertEqual(e["repr"], repr(big)[:50] + "...")
        self.assertEqual(e["len"], 100000)
        nested = [list(range(1000))] * 3
        self.assertEqual(enc(nested, repr_chars=60)["repr"], repr(nested)[:60] + "...")

    def test_a_container_that_fits_the_bound_is_never_marked_cut(self):
        t = tuple(range(450))
        e = enc(t, repr_chars=100000)
        self.assertEqual((e["repr"], e["literal"], e.get("truncated")), (repr(t), True, None))
        s = set(range(300))
        self.assertEqual(enc(s, repr_chars=5000)["repr"], repr(s))

    def test_children_are_bounded(self):
        e = enc(list(range(100)), container_items=5)
        self.assertEqual([c["repr"] for c in e["items"]], ["0", "1", "2", "3", "4"])
        d = enc({"a": [1], "b": 2})
        self.assertEqual([[k["repr"], v["repr"]] for k, v in d["entries"]], [["'a'", "[1]"], ["'b'", "2"]])
        self.assertEqual(d["entries"][0][1]["items"][0]["repr"], "1")

    def test_children_of_one_type_are_the_same_cached_or_not(self):
        # one Encoder: the first encoding fills its child cache, the next
        # ones look children up in a C loop; a container whose later values
        # are new (a miss part way) starts over element by element
        e = Encoder(container_items=8)
        seen = [list(range(5)), list(range(12)), {5, 1, 3, 2, 4}, frozenset({"b", "a"}), tuple("xyz"),
                deque([b"q", b"r"]), [b"q", b"s"], ["a", "long " * 50], [-3, 10 ** 150, 3], list(range(600))]
        for _ in range(2):
            for v in seen + [[40, 41, 1, 2], list("xyzw"), {1: 2, 2: 1}]:
                with self.subTest(v=v):
                    got = json.loads(e.encode(v)[0])
                    kids = got["entries"] if isinstance(v, dict) else got["items"]
                    want = [[json.loads(e.encode(a, 1)[0]), json.loads(e.encode(b, 1)[0])] for a, b in list(v.items())[:8]] \
                        if isinstance(v, dict) else [json.loads(e.encode(x, 1)[0]) for x in list(v)[:8]]
                    self.assertEqual(kids, want)
                    self.assertEqual(got, enc(v, container_items=8))

    def test_instances_show_attributes_and_slots(self):
        class P:
            def __init__(self):
                self.x = 1
                self.tags = ["a"]

        class S:
            __slots__ = ("a", "b")

            def __init__(self):
                self.a = 5

        p = enc(P())
        self.assertEqual({k: v["repr"] for k, v in p["attrs"].items()}, {"x": "1", "tags": "['a']"})
        self.assertIn(" at <addr>>", p["repr"])
        self.assertEqual({k: v["repr"] for k, v in enc(S())["attrs"].items()}, {"a": "5"})

    def test_huge_int_is_described_not_converted(self):
        e = enc(10 ** 5000)
        self.assertEqual((e["repr"], e["literal"], e["truncated"]), ("<int with 5001 digits>", False, True))
        self.assertEqual(enc([10 ** 5000])["repr"], "[<int with 5001 digits>]")
        self.assertEqual(enc(-(10 ** 4000))["repr"], "<int with 4001 digits>")

    def test_recursive_containers_use_pythons_marks(self):
        a = [1]
        a.append(a)
        d = {}
        d["d"] = d
        self.assertEqual(enc(a)["repr"], "[1, [...]]")
        self.assertEqual(enc(d)["repr"], "{'d': {...}}")
        self.assertFalse(enc(a)["literal"])

    def test_hostile_reprs(self):
        class Raises:
            def __repr__(self):
                raise RuntimeError("boom")

        class Slow:
            def __repr__(self):
                while True:
                    pass

        class Mutates:
            def __init__(self):
                self.n = 0

            def __repr__(self):
                self.n += 1
                self.extra = True
                return "M"

        r = enc(Raises())
        self.assertEqual((r["repr"], r["truncated"]), ("<repr of %s raised RuntimeError>" % type_name(Raises), True))
        s = enc(Slow(), repr_timeout=0.05)
        self.assertEqual(s["repr"], "<repr of %s timed out>" % type_name(Slow))
        m = Mutates()
        self.assertEqual(enc(m)["repr"], "M")
        self.assertEqual(vars(m), {"n": 0}, "the instance is restored after its repr mutated it")
        self.assertEqual(enc([Raises()])["repr"], "[<repr of %s raised RuntimeError>]" % type_name(Raises))

    def test_generator(self):
        def g():
            yield 1
        e = enc(g())
        self.assertEqual((e["type"], e["literal"]), ("generator", False))
        self.assertRegex(e["repr"], r"^<generator object .*g at <addr>>$")


class ChangeDetection(unittest.TestCase):
    """Same fingerprint ⇒ same encoding: the tracer relies on it to skip work."""

    def check(self, v, mutate):
        e = Encoder(repr_chars=200, container_items=8)
        fps = Fingerprints(e)
        before = e.encode(v)[0]
        fp = fps.make(v)
        self.assertIsNotNone(fp)
        self.assertTrue(fps.same(v, fp))
        mutate(v)
        after = e.encode(v)[0]
        self.assertNotEqual(before, after, "the mutation changes the encoding")
        self.assertFalse(fps.same(v, fp), "and the fingerprint sees it")

    def test_list_mutations(self):
        self.check([1, 2, 3], lambda v: v.append(4))
        self.check([1, 2, 3], lambda v: v.__setitem__(0, True))  # 1 == True, but not the same
        self.check([0.0], lambda v: v.__setitem__(0, -0.0))
        self.check([[1], [2]], lambda v: v[1].append(3))
        self.check(list(range(10000)), lambda v: v.__setitem__(3, 99))

    def test_dict_and_set_mutations(self):
        self.check({"a": 1, "b": 2}, lambda v: v.__setitem__("a", 1.0))
        d = {"a": 1, "b": 2}

        def reorder(v):
            x = v.pop("a")
            v["a"] = x
        self.check(d, reorder)
        self.check({1, 2}, lambda v: v.add(3))
        self.check({"k": [1]}, lambda v: v["k"].append(2))

    def test_instance_attribute_changes(self):
        class P:
            def __init__(self):
                self.x = 1
                self.items = []
        self.check(P(), lambda v: setattr(v, "x", 2))
        self.check(P(), lambda v: v.items.append(1))

    def test_unchanged_values_keep_their_fingerprint(self):
        e = Encoder()
        fps = Fingerprints(e)
        for v in ([1, "a", (2, 3)], {"x": [1, {"y": 2}]}, (1, [2])):
            fp = fps.make(v)
            self.assertTrue(fps.same(v, fp))

    def test_deeply_immutable_tuples_need_no_checks(self):
        self.assertIs(Fingerprints(Encoder()).make((1, ("a", 2.5))), True)

    def test_builtin_iterators_encode_by_type_alone(self):
        # A for loop's iterator sits in a local (a comprehension's `.0`):
        # its encoding never changes, so it is never re-encoded.
        e = Encoder()
        fps = Fingerprints(e)
        for it in (iter([1, 2]), iter("ab"), iter(range(3)), iter({1: 2}.items()), zip([1], [2])):
            before = e.encode(it)[0]
            self.assertIs(fps.make(it), True, type(it))
            next(it)
            self.assertEqual(e.encode(it)[0], before)

        class Plain:  # a class's instances can gain attributes: checked each time
            pass
        self.assertIsNot(fps.make(Plain()), True)

        class Slotted:
            __slots__ = ("x",)
        self.assertIsNone(fps.make(Slotted()))


if __name__ == "__main__":
    unittest.main()
