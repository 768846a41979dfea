"""Variant names cut to a column's width between their words, told apart, never wrapped.

The compare table gives a name what is left of the screen's width. A name cut anywhere
in its middle lost half a word (`#3 direct…hon-host`: "python" cut to "hon"), which
reads as nothing; so a name is cut between its words ("-" or "_" separated), a run of
words left out one ellipsis (`direct-python…`, `…bridge…`), or at its end, a word there
keeping its start (`direct-pyt…`). Which words stay is chosen by what tells the names
apart, then a start that differs from the others' (kept, the name cut from its end:
`direct…host` dropped "python", the word that says what it is), then by how much stays.
Only a name too long is cut, keeping its start where its run's names stay apart so (the
twelfth walk: `#1 …torchscript` lost its start for want of one column).
"""

from __future__ import annotations

import os
import re
from itertools import product

#: a name's words and what separates them ("direct-python-host", "cgdrag_v2.pt-bridge")
SEPARATOR = re.compile(r"([-_])")
#: the most words a name is cut between one by one (a longer middle is one word)
MOST_WORDS = 12
#: the fewest characters a cut word keeps of its start
WORD_START = 3


def run_tag(name: str) -> tuple[str, str]:
    """("#2 ", "simplenet-aoti") of "#2 simplenet-aoti"; ("", name) of a name without one."""
    tag, _, rest = name.partition(" ")
    return (tag + " ", rest) if rest and tag.startswith("#") else ("", name)


def common_prefix(names: list[str]) -> str:
    """The start every name shares, up to a separator ("simplenet-" of simplenet-aoti-2 and
    simplenet-torchscript-2), when at least two names are compared."""
    if len(names) < 2:
        return ""
    shared = os.path.commonprefix(names)
    return shared[:max(shared.rfind("-"), shared.rfind(" ")) + 1]


def known_start(rest: str, title: str | None, shared: str) -> str:
    """The start of a name the screen already says: the start every name shares, else its
    run's title and separator (`simplenet-` of #1's simplenet-torchscript beside #2's
    direct and bridge: the title line names #1 simplenet)."""
    if shared:
        return shared
    return f"{title}-" if title and rest.startswith(f"{title}-") and len(rest) > len(title) + 1 else ""


def words_of(rest: str) -> tuple[list[str], list[str]]:
    """A name's words and the separator before each (the first's is "")."""
    parts = SEPARATOR.split(rest)
    words, seps = parts[0::2], ["", *parts[1::2]]
    if len(words) > MOST_WORDS:   # the middle as one word: 2**12 ways to keep words at most
        head, tail = MOST_WORDS // 2 - 1, MOST_WORDS // 2
        n = len(words)
        middle = words[head] + "".join(seps[j] + words[j] for j in range(head + 1, n - tail))
        words, seps = [*words[:head], middle, *words[n - tail:]], [*seps[:head + 1], *seps[n - tail:]]
    return words, seps


def joined(words: list[str], seps: list[str], kept, lead: bool) -> str:
    """The words `kept` (a flag each) with their separators, each run of words left out one
    ellipsis; `lead`: an ellipsis already stands for a start left out before them."""
    out, dropped = "…" if lead else "", lead
    for word, sep, keep in zip(words, seps, kept):
        if not keep:
            out += "" if dropped else "…"
            dropped = True
        elif out and not dropped:
            out += sep + word
        else:
            out, dropped = out + word, False
    return out


def told_from(kept: list[str], others: list[set[str]], start: str = "") -> int:
    """How many of the other names (`others`: each one's words) the words `kept` tell this
    one from: those missing one of them (and, for a word cut to its `start`, those with
    no word that begins so)."""
    return sum(1 for words in others
               if any(w not in words for w in kept) or (start and not any(w.startswith(start) for w in words)))


def choices(rest: str, lead: bool, room: int, others: list[set[str]],
            least: int = WORD_START) -> list[tuple[tuple, str, list[str], str]]:
    """Every way to write `rest` in `room` characters, best first, with its score: how
    many of the other names it is told from (`others`: their words), then something
    kept before nothing, then a start that differs from theirs kept, cut from its end
    (`direct-pyt…` beside `direct`, `bridge`, `bridge-python-host`), before words from
    its middle or end (`direct…host`: "python", which tells what it is, gone while
    "host" stayed; a start every other name has, `simplenet…`, is not preferred so),
    then whole words before a word cut to its start (WORD_START characters of it at
    least; `least` where only that tells names apart), then the fewest ellipses (the
    fewest pieces to read), then the characters kept, then its first words kept. Each as (score, text, its whole words, the start
    of a word cut)."""
    words, seps = words_of(rest)
    differs = any(words[0] not in other for other in others)   # its first word tells it from one
    found = []
    for kept in product((1, 0), repeat=len(words)):
        text = joined(words, seps, kept, lead)
        if len(text) <= room:
            whole = [w for w, k in zip(words, kept) if k]
            start = differs and bool(whole) and list(kept) == sorted(kept, reverse=True)   # its first words
            score = (told_from(whole, others), bool(whole), not lead and bool(kept[0]), start, True,
                     -text.count("…"), sum(map(len, whole)), kept)
            found.append((score, text, whole, ""))
    at = 0
    for word, sep in zip(words, seps):
        at += len(sep)
        for end in range(at + least, at + len(word)):
            text = ("…" if lead else "") + rest[:end] + "…"
            if len(text) <= room:
                whole = [w for w in words_of(rest[:at])[0] if w]
                # a word kept to most of its length reads as whole (`simplenet-torchscri…`, not `simplenet…`)
                most = 3 * (end - at) >= 2 * len(word)
                score = (told_from(whole, others, rest[at:end]), True, not lead, differs, most, -text.count("…"),
                         end, ())
                found.append((score, text, whole, rest[at:end]))
        at += len(word)
    return sorted(found, key=lambda item: item[0], reverse=True)


def cut_names(names: list[str], width: int, titles: dict[str, str] | None = None) -> list[str]:
    """Every name in `width` columns, told apart, cut between words; a name that fits is
    whole. A name too long keeps its start where every long name of its run is told apart
    as well so (`#1 simplenet-torchscri…`, not `#1 …torchscript`); else, for each of that
    run's long names, the start all of them
    share after their run's "#2 " goes (an ellipsis stands for it: the title names
    the runs and their model), else the start that is its run's title (`titles`: "#2 " ->
    simplenet; "" for names without a tag: `simplen…chscript` lost what told it from the
    others' `direct`, `bridge` and kept what the title says); then each name longer than
    the width keeps the words that tell it from the most of its run's other names
    (`direct-python…` beside `direct` and `bridge-python-host`), its start first where
    that differs from theirs (`direct-pyt…`, not `direct…host`), then the most it can;
    a word is cut only keeping its start. A name left
    the same as an earlier one takes its best way that tells it from that one. The run's
    tag is kept whole."""
    if all(len(n) <= width for n in names):
        return list(names)
    tags, wholes = zip(*map(run_tag, names))
    shared = common_prefix(list(wholes))
    known = [known_start(rest, (titles or {}).get(tag), shared) for tag, rest in zip(tags, wholes)]
    rests = [rest[len(start):] for rest, start in zip(wholes, known)]
    long = [i for i, (tag, rest) in enumerate(zip(tags, wholes)) if len(tag) + len(rest) > width]
    words = [set(words_of(rest)[0]) for rest in rests]
    whole_words = [set(words_of(rest)[0]) for rest in wholes]
    shown = list(names)   # a name that fits is shown whole (its start went while it had room: `#1 …torchscript`)

    def ways(i: int, least: int = WORD_START, whole: bool | None = None) -> list[tuple[tuple, str, list[str], str]]:
        # told from its run's other names: another run's are told from it by their tag; its
        # start kept (`whole`) where its run's names are told apart as well so, the start the
        # screen says left out else
        mine = [j for j in range(len(names)) if j != i and tags[j] == tags[i]]
        room = width - len(tags[i])
        if whole if whole is not None else keeps_start[tags[i]]:
            return choices(wholes[i], False, room, [whole_words[j] for j in mine], least)
        return choices(rests[i], True, room, [words[j] for j in mine], least)

    def told(i: int, whole: bool) -> int:   # how many names its best way tells it from (keeping its start)
        return next((score[0] for score, *_ in ways(i, whole=whole) if score[2] or not whole), -1)

    keeps_start = {tag: all(not known[i] or told(i, True) >= told(i, False) for i in long if tags[i] == tag)
                   for tag in set(tags)}

    for i in long:
        shown[i] = tags[i] + next((text for _, text, _, _ in ways(i)), "")
    for i in long:   # left the same as an earlier name: its best way that tells it from that one
        clash = [words[j] for j in range(i) if shown[j] == shown[i]]
        if clash:
            shown[i] = next((tags[i] + text for _, text, whole, start in ways(i)
                             if told_from(whole, clash, start) == len(clash) and tags[i] + text not in shown),
                            shown[i])
    for i in long:   # still read as another (`direct…` beside `direct`): cut inside a word, `direct-py…`
        others = [s for j, s in enumerate(shown) if j != i]
        if any(confusable(shown[i], other) for other in others):
            found = [tags[i] + text for _, text, _, start in ways(i, 1) if start]   # the most of it first
            found += [tags[i] + text for _, text, _, _ in ways(i)]
            shown[i] = next((name for name in found if not any(confusable(name, o) or confusable(o, name)
                                                                for o in others)), shown[i])
    return shown


def confusable(name: str, other: str) -> bool:
    """Whether `name` reads as `other`: the same, or its start and an ellipsis (`#1 direct…`
    beside `#1 direct` or `#1 direct-pyt…`: told apart by nothing but `…`)."""
    return name == other or (name.endswith("…") and other.startswith(name[:-1]))
