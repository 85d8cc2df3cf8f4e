"""ExecVerify's Python side: the tracer (ground truth), the judge and rewards.

Standard library only, Python 3.8+, so it runs inside any project's interpreter.
"""

__version__ = "0.1.0"
