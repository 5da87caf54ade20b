"""run(): NumPy arrays in and out for every LEIR dtype, against NumPy/PyTorch and the CLI."""

import json

import numpy as np
import pytest
import steptp
from steptp.arrays import round_bf16

from conftest import cli

# Per dtype: values that probe its range (extremes, signs, fractions, specials).
VALUES = {
    "f64": np.array([1.5, -0.0, 1e300, -2.5e-300, np.inf, np.nan], dtype=np.float64),
    "f32": np.array([1.5, -0.0, 3.4028235e38, 1.17549435e-38, -np.inf, np.nan], dtype=np.float32),
    "f16": np.array([1.5, -0.0, 65504.0, 6.1035156e-05, -np.inf, np.nan], dtype=np.float16),
    "bf16": np.array([1.5, -0.0, 3.3895314e38, 1.0 / 3.0, -np.inf, np.nan], dtype=np.float32),
    "i64": np.array([0, -1, 2**53, -(2**53), 123456789012, 7], dtype=np.int64),
    "i32": np.array([0, -1, 2**31 - 1, -(2**31), 65536, 7], dtype=np.int32),
    "i16": np.array([0, -1, 32767, -32768, 256, 7], dtype=np.int16),
    "i8": np.array([0, -1, 127, -128, 64, 7], dtype=np.int8),
    "u8": np.array([0, 1, 255, 128, 64, 7], dtype=np.uint8),
    "bool": np.array([True, False, True, True, False, False]),
}
# The NumPy dtype of each LEIR dtype (docs/python.md); bf16 arrives as float32.
NUMPY = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.float32, "i64": np.int64,
         "i32": np.int32, "i16": np.int16, "i8": np.int8, "u8": np.uint8, "bool": np.bool_}


def copy_program(src, dst):
    return steptp.Program.parse(
        f"input  A: {src}[2,3]\noutput B: {dst}[2,3]\n"
        f"L^{{2}}_{{i=0}}L^{{3}}_{{j=0}}[B^{{{dst},g}}_{{i,j}}=A^{{{src},g}}_{{i,j}};];", name=f"copy_{src}_{dst}")


@pytest.mark.parametrize("dtype", sorted(VALUES))
@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_round_trip_every_dtype(dtype, target):
    a = VALUES[dtype].reshape(2, 3)
    out = steptp.run(copy_program(dtype, dtype), {"A": a}, target=target)
    b = out["B"]
    assert list(out) == ["B"]
    assert b.dtype == np.dtype(NUMPY[dtype])
    expected = round_bf16(a) if dtype == "bf16" else a
    np.testing.assert_array_equal(b, expected)  # NaN == NaN here; -0.0 vs 0.0 checked below
    if b.dtype.kind == "f":
        assert np.array_equal(np.signbit(b), np.signbit(expected))


def test_bf16_rounding_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(7).standard_normal(6).astype(np.float32).reshape(2, 3) * 1000
    x[0, 0] = np.float32(1.00390625)  # exactly halfway between two bf16 values: ties to even
    out = steptp.run(copy_program("f32", "bf16"), {"A": x})["B"]
    ref = torch.tensor(x).to(torch.bfloat16).to(torch.float32).numpy()
    np.testing.assert_array_equal(out, ref)
    assert out[0, 0] == 1.0


@pytest.mark.parametrize("src,dst", [("i32", "i8"), ("i32", "u8"), ("f64", "f32"), ("f64", "f16"), ("f64", "i16"),
                                     ("i64", "bool")])
def test_narrowing_stores_match_numpy_casts(src, dst):
    rng = np.random.default_rng(3)
    if src.startswith("i"):
        a = rng.integers(-1000, 1000, size=(2, 3)).astype(NUMPY[src])
    else:
        a = rng.standard_normal((2, 3)) * 1e3
    out = steptp.run(copy_program(src, dst), {"A": a})["B"]
    if dst == "bool":
        ref = a != 0
    elif dst.startswith("i") or dst.startswith("u"):
        ref = np.trunc(a).astype(np.int64).astype(out.dtype)  # truncate toward zero, wrap like a C cast
    else:
        ref = a.astype(out.dtype)
    np.testing.assert_array_equal(out, ref)


def test_matmul_against_numpy_and_cli(tmp_path, matmul, matmul_path):
    rng = np.random.default_rng(0)
    a, c = rng.standard_normal((8, 16)), rng.standard_normal((16, 12))
    out = steptp.run(matmul, {"A": a, "C": c})
    np.testing.assert_allclose(out["D"], a @ c, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(steptp.run(matmul, {"A": a, "C": c}, target="cpu")["D"], a @ c, rtol=1e-12)
    # Seeded inputs: the CLI's `run --seed` gives the same outputs.
    ref = json.loads(cli("run", matmul_path, "--seed", 5))["D"]
    got = steptp.run(matmul, seed=5)["D"]
    assert list(got.shape) == ref["shape"] and got.ravel().tolist() == ref["data"]
    # Inputs from lists and int arrays cast within kind.
    ints = steptp.run(matmul, {"A": np.ones((8, 16), dtype=np.int32), "C": np.eye(16, 12).tolist()})["D"]
    np.testing.assert_array_equal(ints, np.ones((8, 16)) @ np.eye(16, 12))


def test_bad_inputs_raise(matmul):
    a, c = np.zeros((8, 16)), np.zeros((16, 12))
    with pytest.raises(ValueError, match=r"'A' has shape \[16, 8\], the program declares \[8, 16\]"):
        steptp.run(matmul, {"A": a.T, "C": c})
    with pytest.raises(KeyError, match="'X' is not a tensor"):
        steptp.run(matmul, {"A": a, "C": c, "X": a})
    with pytest.raises(ValueError, match="'D' is an output"):
        steptp.run(matmul, {"A": a, "C": c, "D": np.zeros((8, 12))})
    with pytest.raises(TypeError, match="'A' is i32"):
        steptp.run(copy_program("i32", "i32"), {"A": np.full((2, 3), 0.5)})
    with pytest.raises(TypeError, match="'A' is bool"):
        steptp.run(copy_program("bool", "bool"), {"A": np.ones((2, 3), dtype=np.int64)})
    with pytest.raises(ValueError, match="unknown target"):
        steptp.run(matmul, target="gpu")
    with pytest.raises(steptp.RunError, match="never set"):
        steptp.run(steptp.Program.parse("input A: f64[4]\noutput B: f64[4]\nL^{2}_{i=0}[B^{f64,g}_{i}=A^{f64,g}_{i};];"))
    with pytest.raises(steptp.Error):  # a missing input: the interpreter names it
        steptp.run(matmul, {"A": a})
