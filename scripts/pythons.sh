#!/usr/bin/env bash
# Prints one Python interpreter per supported minor version (3.8–3.13) found on
# this machine (pyenv first, then PATH), one path a line.
for v in 3.8 3.9 3.10 3.11 3.12 3.13; do
  p=""
  if command -v pyenv >/dev/null 2>&1; then
    full=$(pyenv versions --bare 2>/dev/null | grep -E "^${v//./\\.}\.[0-9]+$" | sort -V | tail -n 1)
    [ -n "$full" ] && p="$(pyenv root)/versions/$full/bin/python$v"
  fi
  [ -x "$p" ] || p=$(command -v "python$v" 2>/dev/null || true)
  [ -n "$p" ] && [ -x "$p" ] && echo "$p"
done
