#!/usr/bin/env bash
# Test-only dependencies of the Python package (python/steptp, docs/python.md), called by
# scripts/deps-test.sh; idempotent:
#   * Debian: python3-dev (headers of the extension module), python3-pytest (the suite runner);
#   * PyPI nanobind in the project venv .venv: the binding generator, so scripts/build.sh builds
#     the module beside the CLI (pip install . gets its own copy through pyproject.toml);
#   * PyPI datasets and pytest in their own venv .venv-datasets: the test that loads the generated
#     files with datasets.load_dataset("json", ...), and a second run of the package's suite under
#     NumPy 2 (datasets pulls numpy 2, which Debian's torch 1.13 cannot use); with transformers
#     and trl for tests/dataset/trl_load_test.py: trl.data_utils needs datasets, transformers
#     (tokenizers and chat templates work without torch) and jinja2, not torch, so trl goes in
#     with --no-deps (its declared dependencies include accelerate, which needs torch).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
apt_ensure python3-dev python3-pytest
venv_ensure .venv --system-site-packages "import nanobind" nanobind==2.9.2
venv_ensure .venv-datasets "" "import datasets, pytest, transformers" datasets==5.2.0 pytest==9.2.0 \
  transformers==5.23.0 jinja2==3.1.6
venv_ensure .venv-datasets "" "import trl.data_utils" --no-deps trl==1.16.0
