"""Names a query asks about that none of the user's memories mention: nothing answers it.

"What did Caroline paint?" asked of a store holding a conversation between Jon and Gina
has no answer there, however close the nearest memories come: nobody in it has heard of
Caroline. Similarity cannot tell (a turn about Gina's painting scores like an answer),
but the names can, so retrieve looks at them before it ranks (``Policy.unknown_names``):

- a *name* is a capitalised word of the query ("Caroline"; not "HR", "Dr", a month, a
  weekday, a holiday or a family title such as "Mum") other than its first word unless
  that is possessive; a *subject* is a name in a subject's place: after an auxiliary verb
  ("did Caroline", "is Caroline"), possessive ("Caroline's") or joined to "I" ("Nadia and
  I"). Chinese: jieba's person names (``nr``) of two or three characters starting with a
  common surname that its dictionary does not list as a common word ("王芳", not "黄金周"
  or "钟点工"), or a surname and the given name it split off ("李" + "志强", "王" + "浩然");
- a name is *known* when a memory the query may read holds it as written or has it as
  its speaker (looked for among the query's best keyword hits, then by the name alone: the
  keyword index stems, "Tim" finds "time"), or when it is one edit from the name of a
  speaker of the query's best hits or, before a name is called unknown, of the user's
  newest episodes (a misspelt name is still that person);
- the check applies only where those hits have named speakers (not "user", "assistant"
  and the like): a store of notes in the first person never names its user, so a name
  asked about there proves nothing;
- nothing is returned when a subject is unknown, or when a name is unknown and the query
  names none of the speakers found (the unknown names come back in ``unknown_names``).

bench/negatives.py measures it on every dev set: how many questions asked of another
user get nothing, and how many asked of their own user are wrongly emptied (figures in
docs/retrieval.md and docs/decisions.md). A question that names nobody is not helped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache

from hindsight.core.models import Memory

UNKNOWN_NAMES = ("empty", "off")
# the best keyword hits and the best vector hits whose speakers are read when a name is
# not in the keyword index (a speaker named only in the memories' speaker field)
SPEAKERS_READ = 25
# the user's newest episodes whose speakers are read before a name is called unknown
SPEAKERS_LISTED = 100


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_AUXILIARIES = _words(
    "did does do is was were are has have had would will can could should might may must"
)
_NOT_NAMES = _words(
    """i i'm i've i'd i'll what when where who whom whose why how which the a an dr mr mrs ms
    st jr sr january february march april may june july august september october november
    december monday tuesday wednesday thursday friday saturday sunday christmas easter
    thanksgiving halloween hanukkah diwali ramadan mum mom mommy mummy dad daddy mother
    father grandma grandpa granny grandad grandmother grandfather nana papa auntie aunt
    uncle god santa english chinese"""
)
# speakers that are roles, not people: a store of them does not name its people
_ROLES = _words("user assistant system agent bot human ai me you tool model unknown customer")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_POSSESSIVE = re.compile(r"['’]s?$")
_CAPITALISED = re.compile(r"[A-Z][a-z]+")
_CJK = re.compile(r"[\u4e00-\u9fff]")
# common Chinese surnames: a person's name starts with one
_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程"
    "苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝"
    "龚邵万钱严覃武戴莫孔向汤"
)
_COMMON_WORD = 100  # jieba's dictionary frequency from which a "name" is a common word
# words jieba tags as names that end like a trade, a time or a place: 钟点工, 黄金周, 林子里
_NOT_NAME_ENDINGS = frozenset("工员师匠周节里边")
_NAME_FLAGS = frozenset({"nr", "nrfg", "nrt"})  # jieba's tags of (parts of) person names


def check_mode(mode: str) -> str:
    """The mode, or a clear error for one that is not known."""
    if mode not in UNKNOWN_NAMES:
        raise ValueError(
            f"unknown unknown_names {mode!r}; choose one of {', '.join(UNKNOWN_NAMES)}"
        )
    return mode


@lru_cache(maxsize=4_096)
def mentions(query: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The query's subjects and its other names, each once, in order."""
    words = _WORD.findall(query)
    subjects: list[str] = []
    others: list[str] = []
    for i, word in enumerate(words):
        name = _POSSESSIVE.sub("", word)
        if not _CAPITALISED.fullmatch(name) or name.lower() in _NOT_NAMES:
            continue
        possessive = name != word
        if i == 0 and not possessive:
            continue
        before = words[i - 1].lower() if i else ""
        after = " ".join(words[i + 1 : i + 3]).lower()
        subject = possessive or before in _AUXILIARIES or after == "and i"
        (subjects if subject else others).append(name)
    if _CJK.search(query):
        others += _chinese_names(query)
    subjects = list(dict.fromkeys(subjects))
    return tuple(subjects), tuple(n for n in dict.fromkeys(others) if n not in subjects)


def _chinese_names(query: str) -> list[str]:
    """jieba's person names: a surname and a given name tagged as a name together ("王芳")
    and not a common word of its dictionary, or apart: a surname and a given name tagged
    as a name ("李" + "志强"), or a surname tagged as a name and a short noun or adjective
    after it ("王" + "浩然")."""
    from jieba import posseg

    from hindsight.core.text import jieba_module

    frequencies = jieba_module().dt.FREQ  # type: ignore[attr-defined]
    words = [(word, flag) for word, flag in posseg.cut(query)]
    names = []
    for i, (word, flag) in enumerate(words):
        after, after_flag = words[i + 1] if i + 1 < len(words) else ("", "")
        given = 1 <= len(after) <= 2 and _CJK.fullmatch(after[0]) is not None
        named_after = after_flag in _NAME_FLAGS or (flag == "nr" and after_flag[:1] in "nazi")
        if len(word) == 1 and word in _SURNAMES and given and named_after:
            names.append(word + after)
        elif (
            flag in _NAME_FLAGS
            and 2 <= len(word) <= 3
            and word[0] in _SURNAMES
            and word[-1] not in _NOT_NAME_ENDINGS
            and (frequencies.get(word) or 0) < _COMMON_WORD
        ):
            names.append(word)
    return names


def written_in(name: str, memory: Memory | None) -> bool:
    """Whether the memory's content holds ``name`` as a word of its own, or its speaker
    is ``name`` (case aside)."""
    if memory is None:
        return False
    speaker = getattr(memory, "speaker", None) or ""
    if name.lower() in speaker.lower().split():
        return True
    if _CJK.search(name):
        return name in memory.content
    pattern = rf"(?<![A-Za-z]){re.escape(name)}(?![A-Za-z])"
    return re.search(pattern, memory.content, re.IGNORECASE) is not None


def people(speakers: Iterable[str | None]) -> set[str]:
    """The speakers that name a person (not a role), lower-cased."""
    named = {s.strip().lower() for s in speakers if s and s.strip()}
    return {s for s in named if s not in _ROLES}


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by at most one insertion, deletion or substitution."""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i + 1 :] == b[i + 1 :] if len(a) == len(b) else a[i:] == b[i + 1 :]


def _is_speaker(name: str, speakers: set[str]) -> bool:
    lowered = name.lower()
    for speaker in speakers:
        words = speaker.split() or [speaker]
        if lowered in words or lowered == speaker:
            return True
        if len(lowered) >= 4 and any(_one_edit(lowered, w) for w in words if len(w) >= 3):
            return True
    return False


def unknown_names(
    query: str,
    held: Callable[[str], bool],
    speakers: Callable[[], Iterable[str | None]],
    more_speakers: Callable[[], Iterable[str | None]] | None = None,
) -> list[str]:
    """The names that leave the query unanswerable by this store (empty: rank as usual).

    ``held(name)``: whether a memory the query may read holds the word; ``speakers()``:
    the speakers of the query's best hits (read only when a name is not held);
    ``more_speakers()``: other speakers of the store (its newest memories'), read only
    before answering that a name is unknown (a speaker named only in the speaker field,
    whose turns are not among the best hits)."""
    subjects, others = mentions(query)
    if not subjects and not others:
        return []
    missing = [name for name in (*subjects, *others) if not held(name)]
    if not missing:
        return []
    known = people(speakers())
    if not known:
        return []
    missing = _unknown(query, subjects, missing, known)
    if missing and more_speakers is not None:
        missing = _unknown(query, subjects, missing, known | people(more_speakers()))
    return missing


def _unknown(
    query: str, subjects: tuple[str, ...], missing: list[str], known: set[str]
) -> list[str]:
    """Of the names no memory holds, those that leave the query unanswerable: a subject
    nobody is called, or any name nobody is called when the query names none of
    ``known``."""
    missing = [name for name in missing if not _is_speaker(name, known)]
    if any(name in subjects for name in missing) or (missing and not _names_any(query, known)):
        return missing
    return []


def _names_any(query: str, speakers: set[str]) -> bool:
    """Whether the query names one of ``speakers``: a word of one, or a capitalised word
    one edit from one (not any word: "time" is not Tim)."""
    words = [_POSSESSIVE.sub("", word) for word in _WORD.findall(query)]
    if {word.lower() for word in words} & {part for s in speakers for part in s.split()}:
        return True
    if any(_is_speaker(word, speakers) for word in words if _CAPITALISED.fullmatch(word)):
        return True
    return any(_CJK.search(s) and s in query for s in speakers)
