"""Shared fixtures of the Python package's tests. ctest (tests/CMakeLists.txt) puts the package built
in build/python first on PYTHONPATH and names the CLI ($STEPTP_EXE) and the shared data
($STEPTP_SHARED_DIR): the CLI is the independent reference for what the bindings return."""

import json
import os
import subprocess

import pytest

SHARED = os.environ.get("STEPTP_SHARED_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared"))
os.environ.setdefault("STEPTP_SHARED", SHARED)


def cli(*args, check=True):
    """Runs the steptp CLI; returns its stdout."""
    r = subprocess.run([os.environ["STEPTP_EXE"], *map(str, args)], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError("steptp %s failed (%d): %s" % (" ".join(map(str, args)), r.returncode, r.stderr))
    return r.stdout


@pytest.fixture(scope="session")
def matmul_path():
    return os.path.join(SHARED, "examples", "matmul.json")


@pytest.fixture(scope="session")
def matmul(matmul_path):
    import steptp

    with open(matmul_path) as f:
        return steptp.Program.from_json(json.load(f))


@pytest.fixture(scope="session")
def wrong_matmul(matmul):
    import steptp

    return steptp.Program.parse(matmul.text().replace("+A", "-A"))
