#!/usr/bin/python3
"""Exports workload references to ONNX with Debian's PyTorch (torch.onnx.export, opset 17).

usage: export_models.py CASES.jsonl STATUS.jsonl

Each case {"id", "source", "hp", "known", "inputs", "dir"}: `source` defines reference(t, hp)
(tests/workloads/torch_oracle.py). The module takes the program's inputs as graph inputs named
"in_<NAME>" and holds its params and constants as buffers (→ initializers); outputs are named
"out_<NAME>". Writes DIR/f64.onnx and DIR/f32.onnx (the float64 and float32 module) and one status
line per case: {"id", "error"?}.
"""
import json
import math
import os
import sys
import traceback
import warnings

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads"))
from torch_oracle import to_tensor  # noqa: E402  (the suite's value decoding)

torch.set_default_dtype(torch.float32)  # torch_oracle computes in float64; export both widths
warnings.filterwarnings("ignore")
torch.set_num_threads(1)


class Wrapped(torch.nn.Module):
    def __init__(self, reference, hp, inputs, held, outputs, values):
        super().__init__()
        self.reference, self.hp, self.inputs, self.held, self.outputs = reference, hp, inputs, held, outputs
        for name in held:
            self.register_buffer("w_" + name, values[name])

    def forward(self, *xs):
        t = dict(zip(self.inputs, xs))
        for name in self.held:
            t[name] = getattr(self, "w_" + name)
        out = self.reference(t, self.hp)
        return tuple(out[name] for name in self.outputs)


def export(rec, float_type, path):
    scope = {"torch": torch, "F": F, "math": math}
    exec(compile(rec["source"], "<reference of %s>" % rec["id"], "exec"), scope)
    known = rec["known"]
    inputs = [k["name"] for k in known if k["role"] == "input"]
    held = [k["name"] for k in known if k["role"] in ("param", "constant")]
    outputs = [k["name"] for k in known if k["role"] == "output"]
    values = {}
    for name, v in rec["inputs"].items():
        t = to_tensor(v)
        values[name] = t.to(float_type) if t.is_floating_point() else t
    m = Wrapped(scope["reference"], rec["hp"], inputs, held, outputs, values)
    with torch.no_grad():
        torch.onnx.export(m, tuple(values[n] for n in inputs), path, opset_version=17,
                          input_names=["in_" + n for n in inputs], output_names=["out_" + n for n in outputs])


def main():
    with open(sys.argv[1]) as fin, open(sys.argv[2], "w") as fout:
        for line in fin:
            rec = json.loads(line)
            status = {"id": rec["id"]}
            try:
                os.makedirs(rec["dir"], exist_ok=True)
                export(rec, torch.float64, os.path.join(rec["dir"], "f64.onnx"))
                export(rec, torch.float32, os.path.join(rec["dir"], "f32.onnx"))
            except Exception as e:  # the exporter refuses this module: reported, not faked
                status["error"] = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
            fout.write(json.dumps(status) + "\n")


if __name__ == "__main__":
    main()
