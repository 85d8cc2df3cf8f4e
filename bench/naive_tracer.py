"""The naive in-process baseline of `npm run bench:tracer`.

What a first tracer looks like: sys.settrace, the repr of every local at every
line, no isolation, no limits, everything in one process. Reads JSON jobs
({"source", "expr"}) from a file given as argv[1] (a JSON list), traces them
one after another and prints, per job, a JSON line {"steps": [[event, line,
{name: repr}], ...], "result": repr | null, "error": str | null}, then a final
line {"seconds": total}. With `--quiet` it prints only the final line.
"""
import json
import sys
import time


def trace_one(source, expr):
    ns = {"__name__": "naive"}
    code = compile(source, "<naive>", "exec")
    exec(code, ns)
    steps = []

    def tr(frame, event, arg):
        if frame.f_code.co_filename != "<naive>":
            return None
        steps.append((event, frame.f_lineno, {k: repr(v) for k, v in frame.f_locals.items()}))
        return tr

    sys.settrace(tr)
    try:
        result = repr(eval(expr, ns))
        error = None
    except Exception as e:  # noqa: BLE001 - the baseline records any failure
        result = None
        error = "%s: %s" % (type(e).__name__, e)
    finally:
        sys.settrace(None)
    return {"steps": steps, "result": result, "error": error}


def main():
    jobs = json.load(open(sys.argv[1]))
    quiet = "--quiet" in sys.argv
    out = sys.stdout
    t0 = time.perf_counter()
    for job in jobs:
        res = trace_one(job["source"], job["expr"])
        line = json.dumps(res)
        if not quiet:
            out.write(line + "\n")
    out.write(json.dumps({"seconds": time.perf_counter() - t0}) + "\n")


if __name__ == "__main__":
    main()
