#!/usr/bin/env python3
"""Reference token ids from Hugging Face `tokenizers` for the equivalence test.

Reads JSONL objects with a "text" field, writes one JSON object per input line:
{"ids": [...], "decoded": ...} with encode(text, add_special_tokens=False) and
decode(ids, skip_special_tokens=False), i.e. the semantics of BpeTokenizer.

usage: hf_oracle.py TOKENIZER_JSON IN.jsonl OUT.jsonl
"""
import json
import sys

from tokenizers import Tokenizer


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    tok = Tokenizer.from_file(sys.argv[1])
    with open(sys.argv[2], encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()]
    encs = tok.encode_batch(texts, add_special_tokens=False)
    with open(sys.argv[3], "w", encoding="utf-8") as f:
        for e in encs:
            f.write(json.dumps({"ids": e.ids, "decoded": tok.decode(e.ids, skip_special_tokens=False)},
                               ensure_ascii=True) + "\n")
    print(f"hf_oracle: {len(texts)} strings, tokenizers {__import__('tokenizers').__version__}")


if __name__ == "__main__":
    main()
