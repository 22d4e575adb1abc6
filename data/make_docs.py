#!/usr/bin/env python3
"""Writes data/tiny_prose_docs.jsonl: the paragraphs of tiny_prose_val.txt as documents
({"id": "val-NNN", "text": ...}) for `fabtrain-exec embed` and `search`. Byte for byte the same
on every run: python3 data/make_docs.py"""
import json, os

here = os.path.dirname(os.path.abspath(__file__))
text = open(os.path.join(here, "tiny_prose_val.txt"), encoding="utf-8").read()
paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
with open(os.path.join(here, "tiny_prose_docs.jsonl"), "w", encoding="utf-8") as out:
    for i, p in enumerate(paragraphs):
        out.write(json.dumps({"id": f"val-{i:03d}", "text": p}, ensure_ascii=False) + "\n")
