"""Extraction benchmark: how many annotated facts an offline reflector finds, how many of
what it finds are annotated facts, in English (MSC, held-back sessions 4 and 1) and Chinese (ours);
docs/benchmarks.md and docs/reflection.md give the data, matching and figures.

    nice -n 5 .venv/bin/python bench/extraction.py [--all-rules]
    nice -n 5 .venv/bin/python bench/extraction.py --dev

Systems (each given one speaker's utterances of a dialogue as episodes): ``rules``,
``baseline``, ``learned`` (the default) and ``learned-e5``. Also: each confidence level's
share of right facts, the statement and clause oracles, calibration, the English-Chinese
logit shift, and offline reflection of 100 episodes timed (wall and CPU seconds). Writes
``bench/results/extraction.json`` (``--dev``: ``extraction_dev.json``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from extraction_data import (
    REPO,
    ZH_DEV_FILE,
    CachedEmbedder,
    Dialogue,
    Score,
    dev_split,
    first_test_split,
    load_session,
    load_zh,
    match,
    matches,
    real_embedder,
    speaker_turns,
    test_split,
)

from hindsight.adapters.reflectors.learned import LearnedReflector
from hindsight.adapters.reflectors.learned.model import shipped_model
from hindsight.adapters.reflectors.learned.normalise import to_fact
from hindsight.adapters.reflectors.learned.segments import clauses, statements
from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.adapters.reflectors.rule_based.clauses import question
from hindsight.core.models import EpisodicMemory
from hindsight.core.ports import Reflector

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
OUT = REPO / "bench" / "results" / "extraction.json"
DEV_OUT = REPO / "bench" / "results" / "extraction_dev.json"


def episodes_of(texts: Sequence[str], key: str = "d") -> list[EpisodicMemory]:
    """One episode per utterance, said by the user, a minute apart."""
    return [
        EpisodicMemory(
            memory_id=f"{key}-{n:03d}",
            tenant_id="bench",
            user_id="u",
            content=text,
            speaker=None,
            occurred_at=T0 + timedelta(minutes=n),
            created_at=T0 + timedelta(minutes=n),
            updated_at=T0 + timedelta(minutes=n),
        )
        for n, text in enumerate(texts)
    ]


_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|my|me)\b|我", re.IGNORECASE)


class FirstPersonBaseline:
    """Every first-person declarative sentence is a fact, as said."""

    label = "baseline"

    def facts(self, texts: Sequence[str]) -> list[str]:
        found: list[str] = []
        for text in texts:
            for sentence in re.split(r"(?<=[.!?。！？])\s*", text):
                sentence = sentence.strip()
                if sentence and _FIRST_PERSON.search(sentence) and not question(sentence):
                    found.append(sentence)
        return list(dict.fromkeys(found))


def extracted(system: Reflector | FirstPersonBaseline, texts: Sequence[str]) -> list[str]:
    if isinstance(system, FirstPersonBaseline):
        return system.facts(texts)
    return [f.content for f in system.reflect("u", episodes_of(texts), []).facts]


def run_system(
    system: Reflector | FirstPersonBaseline, dialogues: Sequence[Dialogue]
) -> dict[str, Any]:
    """Content-word and strict recall/precision of one system over dialogues."""
    content, strict, issue = Score(), Score(), Score()
    for dialogue in dialogues:
        for speaker, utterances in speaker_turns(dialogue):
            found = extracted(system, [u.text for u in utterances])
            gold = dialogue.gold.get(speaker, [])
            content.add(found, gold, strict=False)
            strict.add(found, gold, strict=True)
            issue.add(found, gold, strict="issue")
    return {
        "issue": issue.as_dict(),
        "content": content.as_dict(),
        "strict": strict.as_dict(),
        "facts_per_dialogue": round(content.extracted / max(len(dialogues), 1), 2),
        "gold_per_dialogue": round(content.gold / max(len(dialogues), 1), 2),
    }


def oracle_recall(
    dialogues: Sequence[Dialogue], cut: Callable[[str], list[str]] = statements
) -> dict[str, float]:
    """The recall of a perfect statement picker: annotated facts that some statement of
    their speaker (in the third person) matches, by issue 41's and the content-word
    matching. No extractor of whole statements can find more; annotators often
    paraphrase or infer. ``cut=clauses``: the same for a perfect clause picker."""
    issue, content = Score(), Score()
    for dialogue in dialogues:
        for speaker, utterances in speaker_turns(dialogue):
            every = [to_fact(s) for u in utterances for s in cut(u.text)]
            issue.add(every, dialogue.gold.get(speaker, []), strict="issue")
            content.add(every, dialogue.gold.get(speaker, []), strict=False)
    return {"issue": issue.as_dict()["recall"], "content": content.as_dict()["recall"]}


def every_span(text: str) -> list[str]:
    """Clauses, statements, sentences and two clauses together: what any picker could take."""
    cut = clauses(text)
    pairs = [f"{a} {b}" for a, b in itertools.pairwise(cut)]
    return cut + statements(text) + re.split(r"(?<=[.!?])\s+", text) + pairs


def by_confidence(reflector: Reflector, dialogues: Sequence[Dialogue]) -> dict[str, Any]:
    """Per confidence level of the reflector's facts: how many, and the share that match
    an annotated fact of their speaker (issue 41's matching, and content-word)."""
    rows: dict[str, list[tuple[bool, bool]]] = {"high": [], "medium": [], "low": []}
    for dialogue in dialogues:
        for speaker, utterances in speaker_turns(dialogue):
            gold = dialogue.gold.get(speaker, [])
            for fact in reflector.reflect("u", episodes_of([u.text for u in utterances]), []).facts:
                rows[fact.confidence.value].append(
                    (
                        any(match(fact.content, g, "issue") for g in gold),
                        any(match(fact.content, g, "content") for g in gold),
                    )
                )
    return {
        level: {
            "facts": len(found),
            "right_issue": round(sum(i for i, _ in found) / len(found), 3) if found else None,
            "right_content": round(sum(c for _, c in found) / len(found), 3) if found else None,
        }
        for level, found in rows.items()
    }


def calibration(reflector: LearnedReflector, dialogues: Sequence[Dialogue]) -> dict[str, Any]:
    """How well the probability is calibrated on held-back statements: per bin of predicted
    probability, the share of statements that match an annotated fact of their speaker
    (the training label), and the expected calibration error over the bins."""
    probabilities: list[float] = []
    labels: list[bool] = []
    for dialogue in dialogues:
        for speaker, utterances in speaker_turns(dialogue):
            found = reflector.statements_of(episodes_of([u.text for u in utterances]), "u")
            gold = dialogue.gold.get(speaker, [])
            probabilities.extend(float(p) for p in reflector.score(found)[0])
            labels.extend(any(matches(s.text, g) for g in gold) for s in found)
    bins = []
    error = 0.0
    for low in np.arange(0.0, 1.0, 0.2):
        inside = [
            i for i, p in enumerate(probabilities) if low <= p < low + 0.2 or p == 1.0 == low + 0.2
        ]
        if not inside:
            continue
        predicted = float(np.mean([probabilities[i] for i in inside]))
        observed = float(np.mean([labels[i] for i in inside]))
        error += len(inside) / len(probabilities) * abs(predicted - observed)
        bins.append(
            {
                "bin": f"{low:.1f}-{low + 0.2:.1f}",
                "statements": len(inside),
                "predicted": round(predicted, 3),
                "observed": round(observed, 3),
            }
        )
    return {"bins": bins, "expected_calibration_error": round(error, 3)}


PARALLEL = REPO / "bench" / "data" / "extraction_zh" / "parallel_train.tsv"


def language_shift(embedder: CachedEmbedder) -> dict[str, float]:
    """The classifier's logit for an English statement minus the logit for our Chinese
    translation of it (46 statements of the MSC training dialogues): how much less sure
    of the same content it is in Chinese."""
    pairs = [line.split("\t") for line in PARALLEL.read_text(encoding="utf-8").splitlines()]
    model = shipped_model()

    def logits(texts: list[str]) -> np.ndarray:
        return model.features(embedder.embed_documents(texts), texts) @ model.w + model.b

    shift = logits([p[0] for p in pairs]) - logits([p[1] for p in pairs])
    return {
        "pairs": len(pairs),
        "mean": round(float(shift.mean()), 3),
        "median": round(float(np.median(shift)), 3),
    }


def time_reflection(embedder: CachedEmbedder, dialogues: Sequence[Dialogue]) -> dict[str, Any]:
    """Seconds to reflect on 100 episodes: rules; learned with the model embedding every
    statement; learned again on the same episodes (the vectors it keeps)."""
    texts = [u.text for d in dialogues for u in d.utterances][:100]
    episodes = episodes_of(texts, "timing")
    timings: dict[str, Any] = {"episodes": len(episodes)}
    started = time.perf_counter()
    RuleBasedReflector().reflect("u", episodes, [])
    timings["rules_s"] = round(time.perf_counter() - started, 3)
    uncached = LearnedReflector(embedder.inner)  # type: ignore[arg-type]
    embedder.inner.embed_documents(["warm up: the model loaded before timing"])  # type: ignore[attr-defined]
    timings["statements"] = len(uncached.statements_of(episodes, "u"))
    timings["load_average_1min"] = round(os.getloadavg()[0], 2)
    started, cpu = time.perf_counter(), time.process_time()
    uncached.reflect("u", episodes, [])
    timings["learned_with_embedding_s"] = round(time.perf_counter() - started, 3)
    timings["learned_with_embedding_cpu_s"] = round(time.process_time() - cpu, 3)
    started = time.perf_counter()
    uncached.reflect("u", episodes, [])  # again: the reflector keeps its statements' vectors
    timings["learned_vectors_known_s"] = round(time.perf_counter() - started, 3)
    static = LearnedReflector(embedder.inner, static=True)  # type: ignore[arg-type]
    static.reflect("u", episodes_of(["I load the word embeddings first."], "warm"), [])
    started, cpu = time.perf_counter(), time.process_time()
    static.reflect("u", episodes, [])
    timings["learned_static_s"] = round(time.perf_counter() - started, 3)
    timings["learned_static_cpu_s"] = round(time.process_time() - cpu, 3)
    return timings


def table(results: dict[str, Any]) -> str:
    lines = [
        "| set | system | recall (issue 41) | precision (issue 41) | recall (content) "
        "| precision (content) | F1 | recall (strict) | precision (strict) | facts/dialogue |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for dataset, systems in results["sets"].items():
        for name, r in systems.items():
            c, s, i = r["content"], r["strict"], r["issue"]
            lines.append(
                f"| {dataset} | {name} | {i['recall']:.2f} | {i['precision']:.2f} | "
                f"{c['recall']:.2f} | {c['precision']:.2f} | "
                f"{c['f1']:.2f} | {s['recall']:.2f} | {s['precision']:.2f} | "
                f"{r['facts_per_dialogue']} (gold {r['gold_per_dialogue']}) |"
            )
    return "\n".join(lines)


def dev_report() -> None:
    """``--dev``: the figures on the dev dialogues (English and Chinese)."""
    systems: dict[str, Reflector | FirstPersonBaseline] = {
        "learned (default)": LearnedReflector(static=True),
        "rules": RuleBasedReflector(),
        "baseline": FirstPersonBaseline(),
    }
    english, chinese = dev_split(), load_zh(ZH_DEV_FILE)
    results = {
        "sets": {
            f"en dev (MSC session 3, {len(english)} dialogues)": {
                name: run_system(system, english) for name, system in systems.items()
            },
            f"zh dev (ours, {len(chinese)} dialogues)": {
                name: run_system(system, chinese) for name, system in systems.items()
            },
        },
        "statement_oracle_recall": {"en": oracle_recall(english), "zh": oracle_recall(chinese)},
        "clause_oracle_recall": {
            "en": oracle_recall(english, clauses),
            "zh": oracle_recall(chinese, clauses),
        },
        "command": "nice -n 5 .venv/bin/python bench/extraction.py --dev",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    print(table(results))
    print("recall of a perfect statement picker:", results["statement_oracle_recall"])
    print("recall of a perfect clause picker:", results["clause_oracle_recall"])
    DEV_OUT.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {DEV_OUT}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--all-rules", action="store_true", help="also score rules and baseline on all of session 4"
    )
    parser.add_argument(
        "--dev",
        action="store_true",
        help="the dev dialogues (what thresholds and rules are chosen on) instead: the "
        "default reflector, the rules and the baseline, and the oracles; writes "
        "bench/results/extraction_dev.json",
    )
    args = parser.parse_args()
    if args.dev:
        dev_report()
        return
    embedder = real_embedder()
    learned = LearnedReflector(static=True)
    systems: dict[str, Reflector | FirstPersonBaseline] = {
        "learned (default)": learned,
        "rules": RuleBasedReflector(),
        "baseline": FirstPersonBaseline(),
        "learned-e5": LearnedReflector(embedder),  # type: ignore[arg-type]
    }
    english, chinese, first = test_split(), load_zh(), first_test_split()
    sets: dict[str, dict[str, Any]] = {
        f"en (MSC session 4, {len(english)} dialogues)": {
            name: run_system(system, english) for name, system in systems.items()
        },
        f"en (MSC session 1, {len(first)} dialogues)": {  # learned-e5 was trained on them
            name: run_system(system, first) for name, system in systems.items() if name[-2:] != "e5"
        },
        f"zh (ours, {len(chinese)} dialogues)": {
            name: run_system(system, chinese) for name, system in systems.items()
        },
    }
    if args.all_rules:
        every = load_session(4)
        sets[f"en (all of session 4, {len(every)} dialogues)"] = {
            name: run_system(systems[name], every) for name in ("rules", "baseline")
        }
    sweep = {
        f"{t:.2f}": run_system(LearnedReflector(static=True, threshold=t), english)
        for t in (0.1, 0.15, 0.25, 0.3, 0.4, 0.5)
    }
    results = {
        "sets": sets,
        "learned_threshold_sweep_en": {t: r["issue"] for t, r in sweep.items()},
        "default_by_confidence": {
            "en": by_confidence(learned, english),
            "en session 1": by_confidence(learned, first),
            "zh": by_confidence(learned, chinese),
        },
        "statement_oracle_recall": {"en": oracle_recall(english), "zh": oracle_recall(chinese)},
        "clause_oracle_recall": {
            "en": oracle_recall(english, clauses),
            "en every span": oracle_recall(english, every_span),
            "en session 1": oracle_recall(first, clauses),
            "zh": oracle_recall(chinese, clauses),
        },
        "calibration": {"en": calibration(learned, english), "zh": calibration(learned, chinese)},
        "language_shift_logit": language_shift(embedder),
        "threshold": {"en": learned._model.threshold, "zh": learned._model.threshold_zh},
        "timing_100_episodes": time_reflection(embedder, english),
        "command": "nice -n 5 .venv/bin/python bench/extraction.py",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    print(table(results))
    print("learned, other thresholds (en, issue matching; the shipped one is chosen on dev):")
    for t, r in results["learned_threshold_sweep_en"].items():
        print(f"  {t}: recall {r['recall']:.2f} precision {r['precision']:.2f} f1 {r['f1']:.2f}")
    print("recall of a perfect statement picker:", results["statement_oracle_recall"])
    print("recall of a perfect clause picker:", results["clause_oracle_recall"])
    print("default reflector, facts right by confidence:", results["default_by_confidence"])
    ece = {lang: c["expected_calibration_error"] for lang, c in results["calibration"].items()}
    print("calibration ECE:", ece)
    print("logit English minus Chinese, same statements:", results["language_shift_logit"])
    print(json.dumps(results["timing_100_episodes"]))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
