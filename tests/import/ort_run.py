"""Runs exported models in ONNX Runtime (the oracle; .venv-onnx, scripts/deps-onnx.sh).

usage: ort_run.py CASES.jsonl OUT.jsonl

For each case with DIR/f64.onnx: runs it on the case's inputs (graph inputs "in_<NAME>") in
float64; where ONNX Runtime has no float64 kernel for an op it runs DIR/f32.onnx on the same
values rounded to float32. Writes {"id", "model", "outputs": {onnx name: values}} or {"id", "error"}.
"""
import json
import math
import os
import sys

import numpy as np
import onnxruntime as ort

INT_DTYPES = {"i8", "i16", "i32", "i64", "u8"}


def to_array(v, float_type):
    data = [{"inf": math.inf, "-inf": -math.inf, "nan": math.nan}[x] if isinstance(x, str) else x for x in v["data"]]
    if v["dtype"] == "bool":
        a = np.array(data, dtype=bool)
    elif v["dtype"] in INT_DTYPES:
        a = np.array(data, dtype=np.int64)
    else:
        a = np.array(data, dtype=float_type)
    return a.reshape(v["shape"])


def encode(x):
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def run(path, rec, float_type):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feeds = {i.name: to_array(rec["inputs"][i.name[3:]], float_type) for i in sess.get_inputs()}
    outs = sess.run(None, feeds)
    result = {}
    for meta, a in zip(sess.get_outputs(), outs):
        a = np.asarray(a)
        dtype = "bool" if a.dtype == bool else ("i64" if a.dtype.kind in "iu" else "f64")
        result[meta.name] = {"dtype": dtype, "shape": list(a.shape),
                             "data": [encode(x) for x in a.astype(np.float64).reshape(-1).tolist()]}
    return result


def main():
    ort.set_default_logger_severity(3)
    with open(sys.argv[1]) as fin, open(sys.argv[2], "w") as fout:
        for line in fin:
            rec = json.loads(line)
            out = {"id": rec["id"]}
            f64, f32 = os.path.join(rec["dir"], "f64.onnx"), os.path.join(rec["dir"], "f32.onnx")
            if os.path.exists(f64):
                try:
                    out["outputs"], out["model"] = run(f64, rec, np.float64), f64
                except Exception as e64:
                    try:
                        out["outputs"], out["model"] = run(f32, rec, np.float32), f32
                    except Exception as e32:
                        out["error"] = "f64: %s / f32: %s" % (str(e64).splitlines()[0][:200], str(e32).splitlines()[0][:200])
            fout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
