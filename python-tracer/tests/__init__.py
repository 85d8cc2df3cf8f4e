"""Stdlib unittest suite for the execverify package (run on Python 3.8-3.13)."""
