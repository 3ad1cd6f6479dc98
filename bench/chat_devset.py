"""The chat dev set: a user's long history of chats with an assistant, zh and en.

The data, its categories and how it was made: ``bench/data/chat/README.md`` (the helpers'
brief: ``BRIEF.md``). It has the events set's form (``events_devset.py`` loads, stores,
asks and scores it); the turns carry their speaker ("user" / "assistant"), so a user turn
after the assistant's is a reply and searched with it.

    .venv/bin/python bench/chat_devset.py           # the set's size and a few questions
    .venv/bin/python bench/chat_devset.py --build DIR   # chat_{zh,en}.json from DIR/*.json
    .venv/bin/python bench/devsets.py --sets chat   # every system on it
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import events_devset
from harness import REPO

DATA_DIR = REPO / "bench" / "data" / "chat"
NAME = "chat"
ASKED_AT = "2026-03-01T12:00:00+00:00"
CATEGORIES = ("single-user", "single-assistant", "multi", "update", "temporal")
PROVENANCE = (
    "Written for the Hindsight project by helper models on 2026-12-05 from the brief in "
    "BRIEF.md; not drawn from, translated from or adapted from any dataset."
)


def load(users_a_language: int | None = None) -> events_devset.EventsSet:
    return events_devset.load(DATA_DIR, users_a_language, name=NAME)


def check_part(part: dict) -> list[str]:
    """What is wrong with one helper's file (nothing: an empty list)."""
    problems: list[str] = []
    turns = part["turns"]
    ids = [t["id"] for t in turns]
    if len(set(ids)) != len(ids):
        problems.append("turn ids repeat")
    times = [t["occurred_at"] for t in turns]
    if times != sorted(times):
        problems.append("turns are not in time order")
    if any(t["speaker"] not in ("user", "assistant") for t in turns):
        problems.append("a speaker other than user / assistant")
    known = set(ids)
    for q in part["questions"]:
        if q["category"] not in CATEGORIES:
            problems.append(f"{q['id']}: unknown category {q['category']!r}")
        if missing := [e for e in q["evidence"] if e not in known]:
            problems.append(f"{q['id']}: evidence {missing} is no turn")
        if q["category"] == "multi" and len(q["evidence"]) != 2:
            problems.append(f"{q['id']}: a multi question needs two evidence turns")
    return problems


def build(parts_dir: Path, out_dir: Path = DATA_DIR) -> None:
    """Merge the helpers' files (``chat-{lang}-{n}.json``, one user each, in the form
    BRIEF.md asks for) into one file a language."""
    for language in events_devset.LANGUAGES:
        users, questions = [], []
        parts = sorted(parts_dir.glob(f"chat-{language}-*.json"))
        if not parts:
            raise SystemExit(f"no chat-{language}-*.json in {parts_dir}")
        for path in parts:
            part = json.loads(path.read_text(encoding="utf-8"))
            if problems := check_part(part):
                raise SystemExit(f"{path.name}: " + "; ".join(problems))
            user_id = part["user_id"]
            memories = [
                {k: t[k] for k in ("id", "session", "occurred_at", "speaker", "text")}
                for t in part["turns"]
            ]
            users.append({"user_id": user_id, "persona": part["persona"], "memories": memories})
            questions += [
                {**q, "user_id": user_id, "asked_at": ASKED_AT} for q in part["questions"]
            ]
        data = {"_": PROVENANCE, "language": language, "users": users, "questions": questions}
        target = out_dir / f"{NAME}_{language}.json"
        target.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", "utf-8")
        print(f"{target.name}: {len(users)} users, {len(questions)} questions")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--build", type=Path, metavar="PARTS", help="merge the helpers' files into one a language"
    )
    if (parts := parser.parse_args(argv).build) is not None:
        build(parts)
    events_devset.describe(load())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
