"""The core's error kinds (src/base/error.h) in Python: one class per kind (steptp.errors.BY_KIND),
raised by every call alike, with the status serve gives the kind."""

import pytest
import steptp
from steptp import _core, errors


def test_every_kind_of_the_core_has_one_class():
    kinds = _core.error_kinds()
    assert set(errors.BY_KIND) == set(kinds) == {"bad_request", "invalid", "too_large", "failed"}
    for name, cls in errors.BY_KIND.items():
        assert cls.kind == name and issubclass(cls, steptp.Error)
    assert issubclass(steptp.LeirError, steptp.InvalidInputError)
    # The table's numbers: a usage error exits 2 as CLI11's, the rest 1; serve's statuses.
    assert {k: (v["http_status"], v["exit_code"]) for k, v in kinds.items()} == {
        "bad_request": (400, 2), "invalid": (422, 1), "too_large": (413, 1), "failed": (422, 1)}


def test_calls_raise_the_class_of_the_kind(matmul):
    with pytest.raises(steptp.RequestError, match="unknown strategy 'no_such'") as e:
        steptp.apply(matmul, "no_such")
    assert errors.http_status(e.value) == 400
    with pytest.raises(steptp.RequestError, match="site 999 does not exist") as e:
        steptp.apply(matmul, "loop_split", site=999, params={})
    assert e.value.field == "site"
    with pytest.raises(steptp.RequestError, match="target must be cpu, cuda or tir"):
        steptp.lower(matmul, "fpga")
    # Programs whose signatures differ: invalid input, as serve's /v1/measure answers it (422).
    other = steptp.Program.parse("input A: f64[4]\noutput B: f64[4]\nL^{4}_{i=0}[B^{f64,g}_{i}=A^{f64,g}_{i};];")
    with pytest.raises(steptp.InvalidInputError, match="signatures differ") as e:
        steptp.bench(matmul, against=other)
    assert e.value.field == "against" and errors.http_status(e.value) == 422
    with pytest.raises(steptp.ParseError) as e:
        steptp.Program.parse("input A: f64[4]\noutput B: f64[4]\nL^{4}_{i=0}[B^{f64,g}_{i}=;];")
    assert errors.http_status(e.value) == 422
