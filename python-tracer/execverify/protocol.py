"""The wire between a sandboxed child and its parent: framing and message kinds.

A message is 1 kind byte + 4-byte big-endian length + payload. Everything a
child sends is hostile to its parent: the parent bounds every length and
attributes every message to the one job whose pipe it came on.
"""
from __future__ import annotations

import struct

HEADER = struct.Struct(">cI")

# Kinds every sandboxed child may send.
RESULT = b"R"  # the child's final result (JSON)
LIMIT = b"L"  # a limit was hit (JSON {"limit", "message"})
ERROR = b"E"  # an internal error (JSON {"code", "message"})
# The tracer's kinds.
STEPS = b"S"  # a chunk of steps (JSON fragments)
TRACE = b"T"  # the finished trace's head and tail
BAD_JOB = b"X"  # the job was refused before running (JSON {"code", "message"})
USAGE = b"U"  # after the trace: the child's own peak memory, KB (decimal text)
JOB_DONE = b"J"  # a shared child finished one job of its chunk (empty; tracer.py)
# The expression evaluator's kind.
VALUE = b"V"  # an evaluated answer's value (JSON, see expr_eval)


def frame(kind: bytes, payload: bytes, _len=len, _pack=HEADER.pack) -> bytes:
    """One message as written on the pipe: kind byte, length, payload."""
    return _pack(kind, _len(payload)) + payload
