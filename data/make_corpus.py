#!/usr/bin/env python3
"""Writes the small English corpus the executor trains gpt2-nano on (byte-level, vocab 256).

The prose is generated here from word lists and a small grammar (no text is copied from
anywhere), with a fixed seed, so running it again gives the same files byte for byte:
    python3 data/make_corpus.py      # writes data/tiny_prose_train.txt and tiny_prose_val.txt
"""
import os
import random

NAMES = ["Ada", "Bram", "Clara", "Dmitri", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas",
         "Kira", "Lars", "Mira", "Nadia", "Oskar", "Petra", "Quentin", "Rosa", "Soren", "Tomas",
         "Uma", "Viktor", "Wanda", "Yusuf", "Zelda"]
ROLES = ["the baker", "the ferryman", "the old teacher", "a young sailor", "the carpenter",
         "the mayor", "a tired doctor", "the shepherd", "the clockmaker", "a quiet student",
         "the fisherman", "the innkeeper", "a travelling painter", "the librarian", "the miller",
         "the gardener", "a careful engineer", "the blacksmith", "the weaver", "the postman"]
PLACES = ["the harbour", "the market square", "the mill by the river", "the narrow bridge",
          "the library", "the orchard", "the lighthouse", "the railway station", "the bakery",
          "the hill above the town", "the workshop", "the old church", "the forest path",
          "the school yard", "the kitchen", "the garden behind the inn", "the frozen lake",
          "the village hall", "the quay", "the vineyard"]
THINGS = ["a letter", "the lantern", "a basket of apples", "the heavy key", "a map of the coast",
          "an empty bottle", "the broken clock", "a wooden box", "a bundle of firewood",
          "the red scarf", "a loaf of bread", "the brass compass", "a pair of boots",
          "an old photograph", "the fishing net", "a jar of honey", "the silver ring",
          "a notebook", "the kettle", "a small boat"]
ADJS = ["cold", "bright", "quiet", "crowded", "narrow", "warm", "grey", "golden", "wet", "still",
        "windy", "ancient", "dusty", "green", "silent", "busy", "pale", "gentle", "rough", "clear"]
TIMES = ["In the morning", "At dawn", "Late in the evening", "Before the storm",
         "On the first day of spring", "After the harvest", "During the long winter",
         "At noon", "When the bells rang", "Long after midnight", "On market day",
         "As the tide went out", "Before anyone woke", "In the last week of summer"]
VERBS_T = [("carried", "carry"), ("found", "find"), ("mended", "mend"), ("opened", "open"),
           ("painted", "paint"), ("hid", "hide"), ("sold", "sell"), ("bought", "buy"),
           ("dropped", "drop"), ("cleaned", "clean"), ("lost", "lose"), ("wrapped", "wrap"),
           ("studied", "study"), ("borrowed", "borrow"), ("returned", "return")]
VERBS_I = ["walked slowly to", "hurried towards", "waited near", "sang softly at",
           "looked out over", "slept for an hour at", "worked all day at", "wandered around",
           "came back to", "stood alone at", "arrived late at", "rested beside"]
REASONS = ["because the roads were closed", "since nobody else would do it",
           "so that the children could see", "although it had begun to rain",
           "because a promise is a promise", "while the others were asleep",
           "even though the wind was strong", "as the town had asked",
           "before the light was gone", "so the work would be finished by winter"]
FEELINGS = ["happy", "worried", "curious", "proud", "afraid", "calm", "restless", "grateful",
            "surprised", "sad", "hopeful", "annoyed"]
WEATHER = ["The sky was {adj} and the air smelled of salt.",
           "A {adj} wind came down from the hills.",
           "Rain fell on the roofs for three days.",
           "The snow lay {adj} and deep on every field.",
           "The sun stood low over {place}, and the shadows grew long.",
           "Fog rolled in from the sea and covered {place}.",
           "It was a {adj} night, and the stars were sharp and many."]
SAYINGS = ["\"We will need {thing} before the winter,\" said {who}.",
           "\"Have you seen {thing}?\" asked {who}. \"I left it near {place}.\"",
           "\"Nothing stays the same,\" {who} said, \"not even {place}.\"",
           "\"Come with me to {place},\" said {who}, \"and bring {thing}.\"",
           "\"I am {feeling} today,\" {who} admitted, looking at {thing}.",
           "\"Count them again,\" said {who}. \"There should be {number}.\""]
NUMBERS = ["two", "three", "four", "five", "seven", "nine", "twelve", "twenty", "forty",
           "a hundred"]
COUNTS = list(range(2, 60))


def person(rng):
    return rng.choice(NAMES) if rng.random() < 0.6 else rng.choice(ROLES)


def cap(s):
    return s[0].upper() + s[1:]


def sentence(rng):
    kind = rng.randrange(9)
    who, other = person(rng), person(rng)
    place, thing, adj = rng.choice(PLACES), rng.choice(THINGS), rng.choice(ADJS)
    past, base = rng.choice(VERBS_T)
    if kind == 0:
        return f"{rng.choice(TIMES)}, {who} {past} {thing} at {place}."
    if kind == 1:
        return f"{cap(who)} {rng.choice(VERBS_I)} {place} {rng.choice(REASONS)}."
    if kind == 2:
        return rng.choice(WEATHER).format(adj=adj, place=place)
    if kind == 3:
        return rng.choice(SAYINGS).format(thing=thing, who=who, place=place,
                                          feeling=rng.choice(FEELINGS),
                                          number=rng.choice(NUMBERS))
    if kind == 4:
        return (f"{cap(who)} felt {rng.choice(FEELINGS)} when {other} tried to {base} "
                f"{thing}.")
    if kind == 5:
        n = rng.choice(COUNTS)
        return (f"There were {n} boats in {place} that year, and {who} knew every one of "
                f"them by name.")
    if kind == 6:
        return (f"{cap(place)} was {adj} and {rng.choice(ADJS)}, and {who} did not want to "
                f"leave it.")
    if kind == 7:
        return f"Nobody knew why {who} had {past} {thing}, but {other} had a guess."
    return (f"{cap(who)} and {other} {past} {thing} together, then {rng.choice(VERBS_I)} "
            f"{place}.")


def paragraph(rng):
    return " ".join(sentence(rng) for _ in range(rng.randint(3, 8)))


def write(path, rng, size):
    parts, total = [], 0
    while total < size:
        p = paragraph(rng)
        if rng.random() < 0.1:
            p = f"Chapter {rng.randint(1, 99)}\n\n" + p
        parts.append(p)
        total += len(p) + 2
    with open(path, "w", encoding="ascii") as f:
        f.write("\n\n".join(parts) + "\n")


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    write(os.path.join(here, "tiny_prose_train.txt"), random.Random(20240520), 300_000)
    write(os.path.join(here, "tiny_prose_val.txt"), random.Random(7), 30_000)
