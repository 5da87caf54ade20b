"""Checks emitted TVMScript against real TVM (used by tir_tvm_heavy_test.cc).

usage: tvm_check.py DIR [SHARD COUNT]
DIR holds, per program NAME: NAME.tir (TVMScript to parse, build and run),
optionally NAME.parse.tir (parse only: e.g. the GPU-bound variant), NAME.inputs.json and
NAME.expected.json (values format of LEIR.md §1; expected = the reference interpreter).
Prints one JSON object per line: {"name", "parsed", "built", "ran", "match", "error"}.
With SHARD COUNT, checks only the names at positions SHARD, SHARD+COUNT, ... (sorted order).
Environment: STEPTP_TVM_TARGET (default llvm; "c": build C source, compile it with the system
compiler through export_library, load it), STEPTP_TVM_PRELOAD (a module imported before tvm,
e.g. tilelang, whose bundled TVM reads the legacy T.block dialect).
"""
import importlib
import json
import math
import os
import sys
import traceback

os.environ.setdefault("TVM_FFI_DISABLE_TORCH_C_DLPACK", "1")
import numpy as np  # noqa: E402

if os.environ.get("STEPTP_TVM_PRELOAD"):
    importlib.import_module(os.environ["STEPTP_TVM_PRELOAD"])
import tvm  # noqa: E402

TARGET = os.environ.get("STEPTP_TVM_TARGET", "llvm")

NP = {"f64": "float64", "f32": "float32", "f16": "float16", "i64": "int64", "i32": "int32",
      "i16": "int16", "i8": "int8", "u8": "uint8", "bool": "bool"}


def to_array(v):
    data = [float(x) if not isinstance(x, str) else float(x) for x in v["data"]]
    return np.array(data, dtype=NP[v["dtype"]]).reshape(v["shape"])


def make_tensor(a):
    if hasattr(tvm, "nd") and hasattr(tvm.nd, "array"):
        return tvm.nd.array(a, tvm.cpu())
    return tvm.runtime.tensor(a, tvm.cpu())


def build(mod, path):
    if TARGET == "c":
        lib = tvm.build(mod, target="c")
        # TVM's C codegen spells float infinities as bare `inf` (its LLVM codegen has no such
        # problem); the entry function is named after the prim_func, `main`.
        lib.export_library(path + ".so", options=["-Dinf=(__builtin_inf())", "-Wno-main"])
        return tvm.runtime.load_module(path + ".so")
    if hasattr(tvm, "compile"):
        return tvm.compile(mod, target=TARGET)
    return tvm.build(mod, target=TARGET)


def params_of(text):
    # Parameter order is the declaration order of the `def main(...)` line.
    line = next(l for l in text.splitlines() if l.strip().startswith("def main("))
    inner = line.strip()[len("def main("):-2]
    names = []
    depth = 0
    cur = ""
    for ch in inner:
        depth += ch in "([" and 1 or 0
        depth -= ch in ")]" and 1 or 0
        if ch == "," and depth == 0:
            names.append(cur.split(":")[0].strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        names.append(cur.split(":")[0].strip())
    return names


def close(got, want, atol=1e-9, rtol=1e-7):
    g = np.asarray(got, dtype=np.float64).ravel()
    w = np.asarray(want, dtype=np.float64).ravel()
    if g.shape != w.shape:
        return False
    both_nan = np.isnan(g) & np.isnan(w)
    inf = np.isinf(w) | np.isinf(g)
    ok = both_nan | (inf & (g == w)) | (~inf & (np.abs(g - w) <= atol + rtol * np.abs(w)))
    return bool(np.all(ok))


def check(d, name):
    r = {"name": name, "parsed": False, "built": False, "ran": False, "match": False, "error": ""}
    try:
        p = os.path.join(d, name + ".parse.tir")
        if os.path.exists(p):
            tvm.script.from_source(open(p).read())
        text = open(os.path.join(d, name + ".tir")).read()
        mod = tvm.script.from_source(text)
        r["parsed"] = True
        lib = build(mod, os.path.join(d, name))
        r["built"] = True
        ip = os.path.join(d, name + ".inputs.json")
        if not os.path.exists(ip):
            return r
        inputs = json.load(open(ip))
        expected = json.load(open(os.path.join(d, name + ".expected.json")))
        known = json.load(open(os.path.join(d, name + ".known.json")))
        arrays = {}
        for k in known:
            if k["name"] in inputs:
                arrays[k["name"]] = to_array(inputs[k["name"]])
            elif k.get("value") is not None:
                arrays[k["name"]] = np.array(k["value"], dtype=NP[k["dtype"]]).reshape(k["shape"])
            else:
                arrays[k["name"]] = np.full(k["shape"], np.nan if k["dtype"].startswith("f") else 0,
                                            dtype=NP[k["dtype"]])
        order = [k["name"] for k in known]
        tensors = [make_tensor(arrays[n]) for n in order]
        lib["main"](*tensors)
        r["ran"] = True
        ok = True
        for i, n in enumerate(order):
            if n in expected:
                # f32 programs: TVM computes in f32, the interpreter in f64 then rounds the store.
                # TVM's C codegen prints float64 literals with 7 significant digits (x/6 becomes
                # x*1.666667e-01), so the C target is only good to about 1e-7 relative.
                narrow = expected[n]["dtype"] in ("f32", "f16", "bf16") or TARGET == "c"
                tol = dict(atol=1e-5, rtol=1e-5) if narrow else {}
                ok = ok and close(tensors[i].numpy(), to_array(expected[n]), **tol)
        r["match"] = ok
    except Exception as e:  # a result, not the end of the run
        r["error"] = (type(e).__name__ + ": " + str(e))[-1500:]
    return r


def main():
    d = sys.argv[1]
    names = sorted(f[:-4] for f in os.listdir(d) if f.endswith(".tir") and not f.endswith(".parse.tir"))
    if len(sys.argv) > 3:
        names = names[int(sys.argv[2])::int(sys.argv[3])]
    for n in names:
        print(json.dumps(check(d, n)), flush=True)


if __name__ == "__main__":
    main()
