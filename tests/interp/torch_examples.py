#!/usr/bin/python3
"""PyTorch oracle for ../shared/examples: computes what each example program means, in float64,
with torch's own operators (an implementation independent of the interpreter).

usage: torch_examples.py IN.json OUT.json
IN  = {"<example name>[#tag]": {<values of its inputs, params and constants, LEIR.md §1>}, ...}
OUT = {"<example name>": {<tensor values of its outputs>}, ...}
"""
import json
import math
import sys

import torch
import torch.nn.functional as F


def tensor(v):
    data = [float(x) for x in v["data"]]  # numbers, true/false, "inf", "-inf", "nan"
    return torch.tensor(data, dtype=torch.float64).reshape(v["shape"])


def value(t, dtype):
    t = t.detach()
    if dtype == "f32":
        t = t.to(torch.float32)  # the program stores f32: round once, as the interpreter does
    elif dtype == "i64":
        t = t.to(torch.int64)
    flat = t.reshape(-1).tolist()
    return {"dtype": dtype, "shape": list(t.shape), "data": [float(x) for x in flat]}


def argmax(x):
    A = x["A"]  # [4, 6, 5]; reduce over dim 1
    # The LEIR keeps the LAST index reaching the max (`>=` overwrites), so flip before argmax.
    last = A.shape[1] - 1 - torch.argmax(torch.flip(A, dims=[1]), dim=1)
    return {"C": value(last, "i64")}


def conv2d_pad1(x):
    return {"C": value(F.conv2d(x["A"], x["D"], padding=1), "f64")}


def gelu(x):
    A = x["A"]  # already f32-representable values, held in float64
    return {"C": value(F.gelu(A), "f32")}


def gemm_multiply_leakyrelu(x):
    y = F.linear(x["A"], x["G"], x["H"]) * x["F"]  # F: the constant multiplier
    return {"E": value(F.leaky_relu(y, 0.1), "f64")}


def layernorm(x):
    A = x["A"]
    return {"C": value(F.layer_norm(A, list(A.shape[1:]), x["D"], x["E"], eps=1e-5), "f64")}


def matmul(x):
    return {"D": value(x["A"] @ x["C"], "f64")}


def maxpool2d(x):
    return {"C": value(F.max_pool2d(x["A"], 2), "f64")}


def nll_loss_mean(x):
    return {"D": value(F.nll_loss(x["A"], x["C"].to(torch.int64), reduction="mean"), "f64")}


def softmax(x):
    return {"C": value(torch.softmax(x["A"], dim=1), "f64")}


ORACLES = {
    "argmax": argmax,
    "conv2d_pad1": conv2d_pad1,
    "gelu": gelu,
    "gemm_multiply_leakyrelu": gemm_multiply_leakyrelu,
    "layernorm": layernorm,
    "matmul": matmul,
    "maxpool2d": maxpool2d,
    "nll_loss_mean": nll_loss_mean,
    "online_softmax": softmax,
    "softmax": softmax,
}


def main():
    with open(sys.argv[1]) as f:
        requests = json.load(f)
    out = {}
    for key, inputs in requests.items():
        name = key.split("#")[0]  # "softmax#signs": several input sets per example
        if name not in ORACLES:
            sys.exit(f"torch_examples.py: no oracle for example '{name}'")
        out[key] = ORACLES[name]({k: tensor(v) for k, v in inputs.items()})
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
