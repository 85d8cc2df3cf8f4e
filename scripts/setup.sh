#!/usr/bin/env bash
# Sets the project up: npm packages, the build, and a Python venv from the
# machine's wheel mirror (scripts/python-env.sh). `npm run setup`; then
# `npm test` runs the suites. .ci/run does both on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== npm ci"
npm ci --no-audit --no-fund
echo "== build"
npm run build

echo "== python venv"
bash scripts/python-env.sh
