#!/usr/bin/python3
"""Small PyTorch modules for the ONNX ops the workload suite does not reach (Resize, Pad modes,
Gather, Split, Slice steps, Einsum, Tile, Range, Mod, Trilu, pooling corner cases, int64 and bool
data ...), written as cases for export_models.py: {"id", "source", "hp", "known", "inputs", "dir"}.

usage: op_cases.py DIR OUT.jsonl     (inputs seeded: torch.manual_seed(k) for case k)
"""
import json
import sys

import torch

# id: (reference body returning {"C": ...} or several outputs, [input shapes or ("i64", shape, hi)])
CASES = {
    "resize_nearest": ("F.interpolate(A, scale_factor=2, mode='nearest')", [(1, 2, 3, 4)]),
    "resize_bilinear": ("F.interpolate(A, size=(5, 7), mode='bilinear', align_corners=False)", [(1, 2, 3, 4)]),
    "resize_bilinear_corners": ("F.interpolate(A, scale_factor=2, mode='bilinear', align_corners=True)", [(1, 1, 3, 3)]),
    "pad_reflect": ("F.pad(A, (1, 2), mode='reflect')", [(1, 2, 5)]),
    "pad_replicate": ("F.pad(A, (2, 1, 0, 2), mode='replicate')", [(1, 2, 3, 4)]),
    "pad_constant": ("F.pad(A, (1, 1, 2, 0), value=0.5)", [(2, 3, 4)]),
    "gather_runtime_index": ("torch.index_select(A, 1, I)", [(3, 5), ("i64", (4,), 5)]),
    "gather_constant_index": ("A[1] + A[:, 2].sum()", [(3, 4)]),
    "embedding": ("F.embedding(I, A)", [(6, 3), ("i64", (2, 4), 6)]),
    "split": ("dict(zip(('C', 'D'), torch.split(A, [2, 3], dim=1)))", [(2, 5)]),
    "slice_step": ("A[:, 1:7:2] * 2 - A[:, -3:]", [(2, 8)]),
    "einsum_batched": ("torch.einsum('bij,bjk->bik', A, D)", [(2, 3, 4), (2, 4, 5)]),
    "einsum_outer_trace": ("torch.einsum('i,j->ij', A, D) + torch.einsum('ii', D.unsqueeze(1) * D)", [(3,), (3,)]),
    "tile_expand": ("A.repeat(2, 3) + D.expand(4, 6)", [(2, 2), (1, 6)]),
    "cumsum": ("torch.cumsum(A, dim=0) + torch.cumsum(A, dim=1)", [(3, 4)]),
    "arg_extremes": ("dict(C=torch.argmax(A, dim=1, keepdim=True), D=torch.argmin(A, dim=0))", [(3, 5)]),
    "where_compare": ("torch.where(A > D, A, D * 2.0) + (A <= D).to(A.dtype)", [(3, 4), (4,)]),
    "logic": ("(((A > 0) & (D < 0)) | ~(A > D)) ^ (A > 0.5)", [(3, 4), (3, 4)]),
    "pow_mod": ("torch.pow(A.abs() + 0.5, D) + torch.remainder(A * 3, 0.7) + torch.fmod(A * 3, 0.7)", [(3, 4), (3, 4)]),
    "rounding": ("torch.floor(A * 3) + torch.ceil(A * 3) + torch.round(A * 4) + torch.sign(A) + torch.reciprocal(A + 3)", [(4, 5)]),
    "clamp_min": ("torch.clamp(A, min=-0.25) + F.hardtanh(A, -0.5, 0.5)", [(3, 4)]),
    "shape_ops": ("A.reshape(2, 3, 4).transpose(1, 2).flatten(1).unsqueeze(0).squeeze(0)", [(6, 4)]),
    "view_dynamic_batch": ("A.view(A.shape[0], -1) @ D", [(2, 3, 4), (12, 5)]),
    "arange": ("A * torch.arange(A.shape[1], dtype=A.dtype) + torch.zeros(A.shape, dtype=A.dtype)", [(2, 5)]),
    "triu_tril": ("torch.triu(A, diagonal=1) + torch.tril(A, diagonal=-1) * 2", [(4, 5)]),
    "reduce_family": ("dict(C=A.amax(dim=1) + A.amin(dim=1) + A.prod(dim=1), D=torch.logsumexp(A, dim=0), E=A.norm(p=2, dim=1, keepdim=True), G=A.mean())", [(3, 4)]),
    "softmax_axis0": ("torch.softmax(A, dim=0) + torch.log_softmax(A, dim=1)", [(3, 4)]),
    "max_pool_ceil": ("F.max_pool2d(A, 2, stride=2, ceil_mode=True)", [(1, 2, 5, 5)]),
    "avg_pool_exclude_pad": ("F.avg_pool2d(A, 3, stride=2, padding=1, count_include_pad=False)", [(1, 2, 5, 6)]),
    "avg_pool_ceil": ("F.avg_pool1d(A, 2, stride=2, ceil_mode=True)", [(1, 2, 5)]),
    "conv_transpose_groups": ("F.conv_transpose2d(A, W, stride=2, padding=1, output_padding=1, groups=2, dilation=1)", [(1, 4, 3, 3), ("param", (4, 1, 3, 3))]),
    "conv1d_dilated_padded": ("F.conv1d(A, W, padding=2, dilation=2, stride=2)", [(1, 2, 7), ("param", (3, 2, 3))]),
    "matmul_vectors": ("dict(C=A @ D, E=D.t() @ A, G=A @ A)", [(4,), (4, 3)]),
    "matmul_broadcast": ("A @ D", [(2, 3, 4), (4, 5)]),
    "linear": ("F.linear(A, W, B)", [(2, 4), ("param", (3, 4)), ("param", (3,))]),
    "int_arith": ("I * 2 + 1 - I // 3", [("i64", (3, 4), 9)]),
    "cast_float_to_int": ("(A * 4).to(torch.int64)", [(3, 4)]),
    "activations": ("F.celu(A, 0.7) + F.elu(A, 0.3) + F.selu(A) + F.leaky_relu(A, 0.2) + F.softsign(A) + F.softplus(A) + F.hardswish(A) + F.mish(A)", [(3, 4)]),
    "layer_norm_affine": ("F.layer_norm(A, (4,), W, B, 1e-5)", [(2, 3, 4), ("param", (4,)), ("param", (4,))]),
    "instance_norm_affine": ("F.instance_norm(A, weight=W, bias=B)", [(2, 3, 4), ("param", (3,)), ("param", (3,))]),
    "batch_norm_inference": ("F.batch_norm(A, M, V.abs() + 0.5, W, B, training=False)", [(2, 3, 4), ("param", (3,)), ("param", (3,)), ("param", (3,)), ("param", (3,))]),
    "concat": ("torch.cat([A, D * 2, A[:, :1]], dim=1)", [(2, 3), (2, 2)]),
}

NAMES = "ADEGHJK"


def main():
    out_dir, out_path = sys.argv[1], sys.argv[2]
    with open(out_path, "w") as out:
        for k, (cid, (expr, specs)) in enumerate(CASES.items()):
            torch.manual_seed(k)
            known, values, args = [], {}, []
            params = iter("WBMV")
            for j, spec in enumerate(specs):
                if spec[0] == "i64":
                    name = "I"
                    t = torch.randint(0, spec[2], spec[1])
                    dtype = "i64"
                    role = "input"
                elif spec[0] == "param":
                    name, t, dtype, role = next(params), torch.randn(spec[1], dtype=torch.float64), "f64", "param"
                else:
                    name, t, dtype, role = NAMES[j], torch.randn(spec, dtype=torch.float64), "f64", "input"
                known.append({"name": name, "role": role})
                values[name] = {"dtype": dtype, "shape": list(t.shape), "data": t.reshape(-1).tolist()}
                args.append(name)
            body = expr
            unpack = "".join("    %s = t['%s']\n" % (n, n) for n in args)
            source = "def reference(t, hp):\n%s    r = %s\n    return r if isinstance(r, dict) else {'C': r}\n" % (unpack, body)
            scope = {"torch": torch, "F": torch.nn.functional}
            exec(source, scope)
            with torch.no_grad():
                outs = scope["reference"]({n: torch.tensor(v["data"], dtype=torch.int64 if v["dtype"] == "i64" else torch.float64).reshape(v["shape"]) for n, v in values.items()}, {})
            for name in outs:
                known.append({"name": name, "role": "output"})
            out.write(json.dumps({"id": cid, "source": source, "hp": {}, "known": known, "inputs": values,
                                  "dir": "%s/%s" % (out_dir, cid)}) + "\n")


if __name__ == "__main__":
    main()
