"""JSON for the worker, on the stdlib's C accelerator alone.

`import json` imports `re` (and with it enum, functools, collections): half
of the worker's start-up, which every new pool waits for. The worker needs
only what `_json` already does in C, so it calls it directly. Same results
as json.loads / json.dumps with their defaults (ensure_ascii, allow_nan).
"""
from __future__ import annotations

try:
    from _json import encode_basestring_ascii as quote
    from _json import make_encoder as _make_encoder
    from _json import make_scanner as _make_scanner
except ImportError:  # an interpreter without the accelerator: the stdlib, as is
    from json import dumps, loads  # noqa: F401
    from json.encoder import encode_basestring_ascii as quote  # noqa: F401
else:
    _CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}

    class _Context:
        """What the C scanner reads from a json.JSONDecoder."""
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        parse_constant = _CONSTANTS.__getitem__

    _scan = _make_scanner(_Context())  # type: ignore[arg-type]  # duck-typed like a JSONDecoder

    def loads(s):  # type: ignore[misc]  # json.loads' signature, narrowed to what the worker passes
        """json.loads for UTF-8 bytes or str (ValueError when not JSON)."""
        if not isinstance(s, str):
            s = bytes(s).decode("utf-8")
        start = len(s) - len(s.lstrip(" \t\n\r"))
        try:
            obj, end = _scan(s, start)
        except StopIteration:
            raise ValueError("Expecting value: char %d" % start) from None
        if s[end:].strip(" \t\n\r"):
            raise ValueError("Extra data: char %d" % end)
        return obj

    def _unserializable(o):
        raise TypeError("Object of type %s is not JSON serializable" % type(o).__name__)

    def dumps(obj, separators=(", ", ": ")) -> str:  # type: ignore[misc]  # likewise
        """json.dumps(obj, separators=separators)."""
        item_sep, key_sep = separators
        return "".join(_make_encoder({}, _unserializable, quote, None, key_sep, item_sep, False, False, True)(obj, 0))
