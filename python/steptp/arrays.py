"""run(): programs on NumPy arrays. Every LEIR dtype has its NumPy dtype (bf16: float32 holding
bf16-rounded values, as NumPy has no bfloat16); the core computes in float64 (README: semantics)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from . import _core

if TYPE_CHECKING:
    import numpy as np

# LEIR dtype -> NumPy dtype name.
NUMPY_DTYPES = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "float32", "i64": "int64",
                "i32": "int32", "i16": "int16", "i8": "int8", "u8": "uint8", "bool": "bool"}


def round_bf16(a: "np.ndarray") -> "np.ndarray":
    """float32 values rounded to bfloat16 (nearest, ties to even; NaN kept), as float32."""
    import numpy as np

    a = np.asarray(a, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    r = (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(a), a, r)


def _as_float64(name: str, decl: dict, value: Any) -> "np.ndarray":
    import numpy as np

    a = np.asarray(value)
    dtype = np.dtype(NUMPY_DTYPES[decl["dtype"]])
    if not np.can_cast(a.dtype, dtype, casting="same_kind"):
        raise TypeError(f"'{name}' is {decl['dtype']}: a {a.dtype} array cannot be cast to {dtype} (same kind)")
    if list(a.shape) != list(decl["shape"]):
        raise ValueError(f"'{name}' has shape {list(a.shape)}, the program declares {list(decl['shape'])}")
    a = a.astype(dtype)
    if decl["dtype"] == "bf16":
        a = round_bf16(a)
    return np.ascontiguousarray(a, dtype=np.float64)


def run(program: _core.Program, inputs: Mapping[str, Any] | None = None, *, seed: int = 0,
        target: str = "interp") -> dict[str, "np.ndarray"]:
    """Runs `program` in the reference interpreter (target="interp") or compiled for the CPU
    (target="cpu") and returns every output as a NumPy array of its dtype, keyed by name.

    `inputs` maps each input and param (by name or alias) to an array-like of the declared shape
    whose dtype casts to the declared one within its kind (ints to floats too); None: inputs
    generated from `seed` (as `steptp run --seed`)."""
    import numpy as np

    decls = {d["name"]: d for d in program.signature}
    values = None
    if inputs is not None:
        aliases = {d["alias"]: d["name"] for d in decls.values() if d["alias"]}
        values = {}
        for key, value in inputs.items():
            name = key if key in decls else aliases.get(key)
            if name is None:
                raise KeyError(f"'{key}' is not a tensor of program '{program.name}'")
            if decls[name]["role"] == "output":
                raise ValueError(f"'{key}' is an output of program '{program.name}', not an input")
            if name in values:
                raise ValueError(f"'{name}' is given twice (by name and by alias)")
            values[name] = _as_float64(key, decls[name], value)
    outputs = _core.run(program, values, seed, target)
    return {name: a.astype(NUMPY_DTYPES[decls[name]["dtype"]]) for name, a in outputs.items()}
