"""Prints "PASSED FAILED SKIPPED" read from a pytest --junitxml file.

test/run-all.sh records each Python suite from the runner's own record of its
tests, not from the text it prints. A test counts once: pytest 9 adds a
unittest subTest's failure to its test's <testcase>, pytest 7 fails the test
itself. A test with a <failure> or <error> failed; one with only <skipped> was
skipped. A missing, unreadable or empty file exits 1: no summary is a failure.
"""

import sys
import xml.etree.ElementTree as ET


def main(path: str) -> int:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"junit-summary: no readable pytest summary in {path}: {e}", file=sys.stderr)
        return 1
    rank = {"passed": 0, "skipped": 1, "failed": 2}
    outcome = {}
    for case in root.iter("testcase"):
        key = (case.get("classname"), case.get("name"))
        tags = {child.tag for child in case}
        this = "failed" if tags & {"failure", "error"} else "skipped" if "skipped" in tags else "passed"
        outcome[key] = max(outcome.get(key, "passed"), this, key=rank.__getitem__)
    if not outcome:
        print(f"junit-summary: {path} lists no test", file=sys.stderr)
        return 1
    counts = [sum(1 for o in outcome.values() if o == kind) for kind in ("passed", "failed", "skipped")]
    print(*counts)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
