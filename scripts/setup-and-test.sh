#!/usr/bin/env bash
# Sets up the project (npm, a Python venv from the machine's wheel mirror) and
# runs every test suite. This is the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== npm ci"
npm ci --no-audit --no-fund
echo "== build"
npm run build

echo "== python venv"
bash scripts/python-env.sh

bash test/run-all.sh
