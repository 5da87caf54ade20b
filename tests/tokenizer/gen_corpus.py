#!/usr/bin/env python3
"""Deterministic (seeded) corpus for the tokenizer equivalence test.

Writes one JSON object {"kind": ..., "text": ...} per line. Covers LEIR programs
from shared/, TVMScript-like Python, C and CUDA code, English CoT prose, Unicode
(CJK, emoji, non-NFC combining sequences, Arabic, Devanagari, odd whitespace),
whitespace runs, digit runs, contractions and added/special tokens in text.

usage: gen_corpus.py SHARED_DIR OUT.jsonl [--seed N]
"""
import argparse
import glob
import json
import os
import random

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|box_end|>",
            "<|vision_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
            "<|file_sep|>", "<think>", "</think>", "<tool_response>", "</tool_response>"]
# Near misses that must NOT be split as added tokens.
NEAR = ["<|im_start", "im_end|>", "<think", "<thinking>", "</ think>", "<|IM_START|>", "<<think>>",
        "<|endoftext|", "< think>", "<|im_start|<|im_end|>"]

WORDS = ("the a an of to in is it that we loop tile kernel thread block warp shared memory buffer "
         "index axis reduce sum max softmax matmul tensor shape stride layout fuse split reorder "
         "vectorize unroll cache read write global local register bank conflict latency throughput "
         "first then next finally because so therefore however correct wrong step check output "
         "input value float double half int element row column batch channel height width").split()
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"]
CONTRACTION_WORDS = ["it", "don", "we", "they", "I", "you", "she", "can", "won", "that", "there", "LOOP"]

SCRIPTS = {
    "cjk": "我们需要把循环分块以提高缓存命中率。矩阵乘法的计算量很大，线程块共享内存。日本語のテキストとカタカナ、ひらがな。한국어 텍스트도 있습니다.",
    "emoji": ["😀", "🚀", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷", "🇯🇵", "❤️", "🧑🏿‍💻", "✅", "🔥", "1️⃣", "🏳️‍🌈"],
    "arabic": "مرحبا بالعالم، هذا نص عربي مع أرقام ١٢٣٤٥ وعلامات التشكيل: كَتَبَ",
    "devanagari": "नमस्ते दुनिया, यह हिन्दी पाठ है। संख्याएँ १२३४५ और क्षत्रिय",
    "greek_cyr": "Καλημέρα κόσμε ΣΊΣΥΦΟΣ; Привет, мир! Ёлка ЁЛКА",
    "thai": "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่าง",
}
# Non-NFC and normalization-sensitive sequences (NFC must compose/reorder them).
NON_NFC = ["e\u0301", "E\u0301", "a\u0308", "A\u030a", "o\u0302\u0323", "o\u0323\u0302",
           "d\u0307\u0323", "\u1100\u1161\u11a8", "\u212b", "\u212a", "\u2126", "\u0958",
           "\u0915\u093c", "\u00c5", "n\u0303", "\u0041\u0300\u0301\u0302", "i\u0307",
           "\u1e9b\u0323", "\u0344", "\u0f73", "\u2000", "\ufb01", "\u00bd", "x\u20d7", "q\u0307\u0323"]
ODD_SPACE = ["\u00a0", "\u3000", "\u2028", "\u2029", "\x85", "\u180e", "\u200b", "\u2009", "\u202f",
             "\u205f", "\u1680", "\x0b", "\x0c", "\x1c", "\x1f", "\ufeff", "\r", "\r\n", "\t"]
NUMERIC = ["\u2160\u2161\u2162", "\u00b2\u00b3", "\uff11\uff12\uff13", "\u0663\u0664", "\u0967\u0968",
           "\u2460\u2461", "\u3007", "\u00bc", "\U0001d7ce\U0001d7cf"]
PUNCT = list("!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~") + ["'", "’", "“", "”", "—", "…", "«", "»", "·", "§"]


def leir_texts(shared):
    out = []
    with open(os.path.join(shared, "corpus", "public_translator_sample.jsonl")) as f:
        for line in f:
            line = line.strip()
            if line:
                rec = json.loads(line)
                if rec.get("leir"):
                    out.append(rec["leir"])
    for p in sorted(glob.glob(os.path.join(shared, "examples", "*.json"))):
        with open(p) as f:
            rec = json.load(f)
        if rec.get("leir"):
            out.append(rec["leir"])
    return out


def leir_variants(r, programs, n):
    out = []
    for _ in range(n):
        p = r.choice(programs)
        mode = r.randrange(4)
        if mode == 0:  # a slice
            a = r.randrange(len(p))
            out.append(p[a:a + r.randrange(1, 300)])
        elif mode == 1:  # pretty-printed, one nest per line, indented
            out.append(p.replace("];", "];\n").replace("[", "[\n  ").replace(";", ";\n  "))
        elif mode == 2:  # inside a chat/CoT frame
            out.append(f"<|im_start|>assistant\n<think>\nThe program is {p}\n</think>\nDone.<|im_end|>")
        else:  # two programs, tab and newline separated
            out.append(p + "\n\n\t" + r.choice(programs))
    return out


def tvmscript(r):
    n, m, k = (r.choice([16, 32, 64, 128, 1024, 4096]) for _ in range(3))
    dt = r.choice(["float32", "float16", "float64", "int8"])
    name = r.choice(["main", "matmul", "softmax_kernel", "fused_conv2d_relu", "layer_norm"])
    tail = r.choice(["", "  ", "\n", "\n\n", "  \n"])
    return f'''@T.prim_func
def {name}(A: T.Buffer(({n}, {k}), "{dt}"), B: T.Buffer(({k}, {m}), "{dt}"), C: T.Buffer(({n}, {m}), "{dt}")):
    T.func_attr({{"global_symbol": "{name}", "tir.noalias": T.bool(True)}})
    # with T.block("root"):
    for i0_0 in T.thread_binding({n // 16}, thread="blockIdx.x"):
        for i1_1 in T.thread_binding(16, thread="threadIdx.x"):
            for k in range({k}):
                with T.block("C"):
                    vi = T.axis.spatial({n}, i0_0 * 16 + i1_1)
                    vj, vk = T.axis.remap("SR", [i1_1, k])
                    T.reads(A[vi, vk], B[vk, vj])
                    T.writes(C[vi, vj])
                    with T.init():
                        C[vi, vj] = T.{dt}(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]{tail}'''


def c_code(r):
    t = r.choice(["float", "double", "int", "half", "__nv_bfloat16"])
    n = r.randrange(1, 100000)
    if r.random() < 0.5:
        return f'''__global__ void kernel_{r.randrange(1000)}(const {t}* __restrict__ a, {t}* out, int n) {{
  __shared__ {t} tile[32][33];  // +1 avoids bank conflicts
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {{
    {t} acc = 0;
#pragma unroll 4
    for (int k = 0; k < {n}; ++k) acc += a[i * {n} + k];
    out[i] = acc;\t// done
  }}
  __syncthreads();
}}
// launch: kernel<<<(n + 255) / 256, 256>>>(d_a, d_out, n);
'''
    return f'''#include <stdio.h>
#include <stdlib.h>

static {t} dot(const {t} *x, const {t} *y, size_t n) {{
    {t} s = 0;
    for (size_t i = 0; i != n; i++) {{
        s += x[i]*y[i];   /* fma? */
    }}
    return s;
}}

int main(int argc, char **argv) {{
    if (argc < 2) {{ fprintf(stderr, "usage: %s N\\n", argv[0]); return 1; }}
    printf("%d %f %e\\n", {n}, 3.14159, 1e-{r.randrange(1, 30)});
    return x->y >= 0 && a != b || c <= d ? 0x{r.randrange(1 << 30):X} : ~0u >> 3;
}}
'''


def prose(r):
    sents = []
    for _ in range(r.randrange(2, 8)):
        w = [r.choice(WORDS) for _ in range(r.randrange(4, 16))]
        if r.random() < 0.5:
            w.insert(r.randrange(len(w)), r.choice(CONTRACTION_WORDS) + r.choice(CONTRACTIONS))
        if r.random() < 0.3:
            w.insert(r.randrange(len(w)), str(r.randrange(10 ** r.randrange(1, 8))))
        s = " ".join(w)
        sents.append(s[0].upper() + s[1:] + r.choice([".", "!", "?", ":", ";", "...", ".\n", ".\n\n"]))
    start = r.choice(["", "Let me think step by step. ", "Step 1: ", "**Plan**: ", "- ", "1. "])
    return start + " ".join(sents)


def unicode_mix(r):
    parts = []
    for _ in range(r.randrange(1, 12)):
        kind = r.randrange(8)
        if kind == 0:
            s = SCRIPTS["cjk"]
            a = r.randrange(len(s))
            parts.append(s[a:a + r.randrange(1, 30)])
        elif kind == 1:
            parts.append("".join(r.choice(SCRIPTS["emoji"]) for _ in range(r.randrange(1, 4))))
        elif kind == 2:
            parts.append(r.choice([SCRIPTS["arabic"], SCRIPTS["devanagari"], SCRIPTS["greek_cyr"], SCRIPTS["thai"]]))
        elif kind == 3:
            parts.append(r.choice(WORDS) + r.choice(NON_NFC) + r.choice(["", r.choice(WORDS)]))
        elif kind == 4:
            parts.append(r.choice(ODD_SPACE) * r.randrange(1, 4))
        elif kind == 5:
            parts.append(r.choice(NUMERIC))
        elif kind == 6:
            parts.append(r.choice(PUNCT) * r.randrange(1, 4))
        else:
            parts.append(r.choice(WORDS))
        parts.append(r.choice(["", " ", "  ", "\n"]))
    return "".join(parts)


def whitespace(r):
    parts = []
    for _ in range(r.randrange(1, 8)):
        parts.append(r.choice(["", r.choice(WORDS), r.choice(PUNCT), str(r.randrange(100)), "é", "名"]))
        parts.append("".join(r.choice([" ", " ", "\t", "\n", "\r\n", "\r", "\u00a0", "\x0b"])
                             for _ in range(r.randrange(1, 12))))
    return "".join(parts)


def digits(r):
    parts = []
    for _ in range(r.randrange(1, 6)):
        d = "".join(r.choice("0123456789") for _ in range(r.randrange(1, 40)))
        parts.append(r.choice([d, d + "." + d[::-1], "-" + d, "0x" + d, d + "e-5", "v" + d, "x" + d + "y",
                               d + "%", "$" + d, d[:3] + "," + d[3:]]))
        parts.append(r.choice([" ", "", ", ", "\n"]))
    return "".join(parts)


def contractions(r):
    parts = []
    for _ in range(r.randrange(1, 10)):
        c = r.choice(CONTRACTIONS + ["'S", "'T", "'RE", "'Ve", "'M", "'LL", "'D", "'rE", "'lL", "'x", "’s",
                                      "'ſ", "'ſx", "''s", "'", "'s'"])
        w = r.choice(CONTRACTION_WORDS + ["", "123", "é", "名"])
        parts.append(w + c + r.choice(["", "x", "s", "ll", " ", "!", "\n"]))
        parts.append(r.choice([" ", "", "  "]))
    return "".join(parts)


def specials(r):
    if r.random() < 0.3:
        turns = []
        for role in ["system", "user", "assistant"]:
            body = prose(r) if role != "assistant" else "<think>\n" + prose(r) + "\n</think>\n\n" + prose(r)
            turns.append(f"<|im_start|>{role}\n{body}<|im_end|>\n")
        return "".join(turns)
    parts = []
    for _ in range(r.randrange(1, 8)):
        parts.append(r.choice(SPECIALS + NEAR + SPECIALS))
        parts.append(r.choice(["", " ", "\n", r.choice(WORDS), " " + r.choice(WORDS) + " ", "é\u0301",
                               "  ", "<", "|", ">"]))
    return "".join(parts)


def fuzz(r):
    pool = ([chr(c) for c in range(32, 127)] + ODD_SPACE + NON_NFC + NUMERIC + list(SCRIPTS["cjk"][:20])
            + SCRIPTS["emoji"] + PUNCT + SPECIALS + ["\n", "\t", " ", " "])
    # Random code points too (skipping surrogates), incl. unassigned and private use.
    for _ in range(20):
        c = r.randrange(0x80, 0x30000)
        if not 0xD800 <= c <= 0xDFFF:
            pool.append(chr(c))
    return "".join(r.choice(pool) for _ in range(r.randrange(1, 80)))


def build(shared, seed):
    r = random.Random(seed)
    programs = leir_texts(shared)
    items = [("leir", p) for p in programs]
    items += [("leir", t) for t in leir_variants(r, programs, 100)]
    gens = [("tvmscript", tvmscript, 120), ("c_cuda", c_code, 120), ("prose", prose, 150),
            ("unicode", unicode_mix, 200), ("whitespace", whitespace, 100), ("digits", digits, 60),
            ("contractions", contractions, 100), ("specials", specials, 100), ("fuzz", fuzz, 150)]
    for kind, fn, n in gens:
        items += [(kind, fn(r)) for _ in range(n)]
    edge = ["", " ", "  ", "\n", "\n\n\n", "\t", " \n ", "a", "'s", "'", "é", "e\u0301", "<|im_start|>",
            "<|im_start|><|im_end|>", "0", "00000000000000000000", "\r\n\r\n", "   x", "x   ", "\x85\x85",
            "a \x85\x85b", "\u3000\u3000y", " " * 1000, "ab" * 2000, "\n".join(programs)]
    items += [("edge", t) for t in edge]
    return items


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shared")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=20240611)
    a = ap.parse_args()
    items = build(a.shared, a.seed)
    with open(a.out, "w", encoding="utf-8") as f:
        for kind, text in items:
            f.write(json.dumps({"kind": kind, "text": text}, ensure_ascii=True) + "\n")
    print(f"wrote {len(items)} strings to {a.out}")


if __name__ == "__main__":
    main()
