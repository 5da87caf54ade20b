#!/usr/bin/env bash
# Test-only dependencies of the Python package (python/steptp, docs/python.md), apart from the main
# job's (scripts/deps.sh); idempotent, called by scripts/test.sh:
#   * Debian: python3-dev (headers of the extension module), python3-pytest (the suite runner);
#   * PyPI nanobind in the project venv .venv: the binding generator, so scripts/build.sh builds
#     the module beside the CLI (pip install . gets its own copy through pyproject.toml);
#   * PyPI datasets and pytest in their own venv .venv-datasets: the test that loads the generated
#     files with datasets.load_dataset("json", ...), and a second run of the package's suite under
#     NumPy 2 (datasets pulls numpy 2, which Debian's torch 1.13 cannot use).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_TEST_PACKAGES=(python3-dev python3-pytest)
missing=()
for p in "${APT_TEST_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps-python: installing Debian packages: ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

NANOBIND=nanobind==2.9.2
if ! .venv/bin/python3 -m nanobind --cmake_dir >/dev/null 2>&1; then
  echo "deps-python: installing $NANOBIND into .venv" >&2
  .venv/bin/pip install -q --disable-pip-version-check "$NANOBIND"
fi

if [ ! -x .venv-datasets/bin/python3 ]; then
  /usr/bin/python3 -m venv .venv-datasets
fi
if ! .venv-datasets/bin/python3 -c "import datasets, pytest" >/dev/null 2>&1; then
  echo "deps-python: installing datasets and pytest into .venv-datasets" >&2
  .venv-datasets/bin/pip install -q --disable-pip-version-check datasets==5.2.0 pytest==9.2.0
fi
