"""Helper of `npm run bench:tracer` (part b): the loop-heavy program, run
untraced or under the naive tracer of naive_tracer.py.

    python bench/tracer_loop.py untraced N   → {"seconds": s}
    python bench/tracer_loop.py naive N      → {"seconds": s, "events": k, "digests": [...]}

The digests (one per recorded event: sha1 of "event|line|name=repr␟...") are
computed after the timed run, so they cost the naive tracer nothing; the
benchmark compares them with the digests of our decoded states.
"""
import hashlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import naive_tracer  # noqa: E402

SOURCE = '''
def f(nums, target):
    count = 0
    n = len(nums)
    for i in range(n):
        for j in range(i + 1, n):
            if nums[i] + nums[j] == target:
                count += 1
    return count
'''


def entry(n):
    # A fixed pseudo-random tuple, the same on every run and interpreter.
    nums = tuple((i * 7919) % 1000 for i in range(n))
    return "f(%r, 999)" % (nums,)


def digest(event, line, locals_):
    body = "\x1f".join("%s=%s" % (k, locals_[k]) for k in sorted(locals_))
    return hashlib.sha1(("%s|%d|%s" % (event, line, body)).encode("utf-8")).hexdigest()


def main():
    mode, n = sys.argv[1], int(sys.argv[2])
    expr = entry(n)
    if mode == "source":
        print(json.dumps({"source": SOURCE, "expr": expr}))
        return
    if mode == "untraced":
        ns = {}
        exec(compile(SOURCE, "<naive>", "exec"), ns)
        t0 = time.perf_counter()
        eval(expr, ns)
        print(json.dumps({"seconds": time.perf_counter() - t0}))
        return
    t0 = time.perf_counter()
    res = naive_tracer.trace_one(SOURCE, expr)
    seconds = time.perf_counter() - t0
    digests = [digest(e, line, loc) for e, line, loc in res["steps"]]
    print(json.dumps({"seconds": seconds, "events": len(res["steps"]), "result": res["result"], "digests": digests}))


if __name__ == "__main__":
    main()
