#!/usr/bin/python3
"""PyTorch oracle for the workload suite: one process computes every reference output.

usage: torch_oracle.py IN.jsonl OUT.jsonl

Each input line is {"id", "source", "hp", "inputs"}: `source` defines `reference(t, hp)` with real
PyTorch ops, `inputs` holds tensor values in the LEIR.md §1 format. Each output line is
{"id", "outputs"} (same value format) or {"id", "error"}. Floats travel as float64 and are
computed in float64; integer tensors become int64, bool tensors bool.
"""
import json
import math
import sys
import traceback

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)  # the test machine's cores are shared; results do not depend on it

INT_DTYPES = {"i8", "i16", "i32", "i64", "u8"}


def decode_number(x):
    if isinstance(x, str):
        return {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}[x]
    return x


def to_tensor(v):
    data = [decode_number(x) for x in v["data"]]
    shape = v["shape"]
    if v["dtype"] == "bool":
        t = torch.tensor([bool(x) for x in data], dtype=torch.bool)
    elif v["dtype"] in INT_DTYPES:
        t = torch.tensor([int(x) for x in data], dtype=torch.int64)
    else:
        t = torch.tensor(data, dtype=torch.float64)
    return t.reshape(shape)


def encode_number(x):
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def from_tensor(t):
    t = torch.as_tensor(t)
    if t.dtype == torch.bool:
        dtype, data = "bool", [bool(x) for x in t.reshape(-1).tolist()]
    elif not t.is_floating_point():
        dtype, data = "i64", [int(x) for x in t.reshape(-1).tolist()]
    else:
        dtype, data = "f64", [encode_number(float(x)) for x in t.to(torch.float64).reshape(-1).tolist()]
    return {"dtype": dtype, "shape": list(t.shape), "data": data}


def main():
    src_path, out_path = sys.argv[1], sys.argv[2]
    compiled = {}
    with open(src_path) as fin, open(out_path, "w") as fout:
        for line in fin:
            if not line.strip():
                continue
            rec = json.loads(line)
            result = {"id": rec["id"]}
            try:
                src = rec["source"]
                if src not in compiled:
                    scope = {"torch": torch, "F": F, "math": math}
                    exec(compile(src, "<reference of %s>" % rec["id"], "exec"), scope)
                    compiled[src] = scope["reference"]
                tensors = {k: to_tensor(v) for k, v in rec["inputs"].items()}
                with torch.no_grad():
                    outs = compiled[src](tensors, rec.get("hp", {}))
                result["outputs"] = {k: from_tensor(v) for k, v in outs.items()}
            except Exception:
                result["error"] = traceback.format_exc(limit=3)
            fout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
