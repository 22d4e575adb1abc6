#!/usr/bin/env python3
"""Writes data/tiny_prose_queries.jsonl: labelled queries over data/tiny_prose_docs.jsonl for
`fabtrain-exec evaluate-search`, one a line: {"query": ..., "relevant": [ids]}. Each query is
asked in words of its own; its relevant documents are those holding every phrase listed beside
it (case-insensitive), so the labels follow from the documents and can be checked by reading
them. Byte for byte the same on every run: python3 data/make_queries.py"""
import json, os

# (query, phrases a relevant document holds)
QUERIES = [
    ("who dropped the kettle, and why nobody knew", ["dropped the kettle"]),
    ("the start of a new chapter", ["Chapter"]),
    ("someone is told to count again: there should be seven", ["There should be seven"]),
    ("a red scarf", ["red scarf"]),
    ("apples picked in the orchard", ["orchard", "apples"]),
    ("an old photograph", ["old photograph"]),
    ("a jar of honey", ["jar of honey"]),
    ("waiting because the roads were closed", ["the roads were closed"]),
    ("the mayor of the town", ["mayor"]),
    ("after the harvest was in", ["harvest"]),
    ("when the church bells rang", ["bells rang"]),
    ("as the tide went out", ["tide went out"]),
    ("a green wind from the hills", ["green wind"]),
    ("the mystery of the wrapped silver ring", ["had wrapped the silver ring"]),
    ("nobody knew why the broken clock was lost", ["had lost the broken clock"]),
    ("the weaver", ["weaver"]),
    ("Uma by the frozen lake", ["frozen lake", "Uma"]),
    ("only two boats, each known by name", ["There were 2 boats"]),
    ("an empty bottle", ["empty bottle"]),
    ("the blacksmith in the library", ["library", "blacksmith"]),
]

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "tiny_prose_docs.jsonl"), encoding="utf-8") as f:
    docs = [json.loads(line) for line in f if line.strip()]
with open(os.path.join(here, "tiny_prose_queries.jsonl"), "w", encoding="utf-8") as out:
    for query, phrases in QUERIES:
        relevant = [d["id"] for d in docs
                    if all(p.lower() in d["text"].lower() for p in phrases)]
        assert 1 <= len(relevant) <= 10, (query, relevant)  # answerable within the first 10
        out.write(json.dumps({"query": query, "relevant": relevant}) + "\n")
