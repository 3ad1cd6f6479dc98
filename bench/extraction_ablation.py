"""What was tried to lift the learned extractor (issue #19), and why none of it shipped.

    nice -n 5 .venv/bin/python bench/extraction_ablation.py [--test]

Each variant is trained like ``bench/train_extractor.py`` (statements of MSC sessions 1-3,
content-word labels, Platt scaling on the 60 dev dialogues of session 3) and run through
the whole learned reflector on two sets nothing is trained on:

- ``dev``: the 60 dev dialogues of session 3 (where the shipped threshold is chosen);
- ``dev2``: 150 seeded dialogues of session 4 *outside* the test split (2.5 times the
  dev set's annotated facts: a steadier second opinion; the test split is never read).

Variants:

- ``shipped``: the shipped recipe (logistic regression, 10,000 statements);
- ``lr-25k``: the same on 25,000 statements;
- ``mlp-25k``: one hidden layer of 64 rectified units (numpy, Adam, early stopping on a
  tenth of the training statements), 25,000 statements, Platt scaling kept;
- ``split-25k``: finer statements (a clause after a comma and a conjunction or a
  semicolon; in Chinese also one starting with 也/还, with the unsaid 我 given back), the
  classifier retrained on them.

``--test`` also scores every variant on the 120 test dialogues (the final check only:
nothing above is chosen on them). Content-word recall / precision / F1 at thresholds
0.15-0.35 for each, and the statement oracle recall of each segmentation. Writes
``bench/results/extraction_ablation.json``. About 8 minutes on a warm vector cache
(``bench/.cache``), plus the embedding of ~33,000 statements on a cold one.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layers" / "hindsight"))

import train_extractor
from extraction import oracle_recall, run_system
from extraction_data import REPO, dev_split, load_session, real_embedder, test_split, train_split

from hindsight.adapters.reflectors.learned import LearnedReflector, segments
from hindsight.adapters.reflectors.learned import reflector as reflector_module
from hindsight.adapters.reflectors.learned.model import CATEGORIES, StatementModel

OUT = REPO / "bench" / "results" / "extraction_ablation.json"
THRESHOLDS = (0.15, 0.2, 0.25, 0.3, 0.35)
DEV2_DIALOGUES = 150


def dev2_split() -> list:
    """150 seeded session-4 dialogues that are not in the test split."""
    test = {d.key for d in test_split()}
    rest = [d for d in load_session(4) if d.key not in test]
    return [rest[i] for i in sorted(random.Random(2026).sample(range(len(rest)), DEV2_DIALOGUES))]


# --- the finer segmentation ------------------------------------------------------------------

_FIRST = r"(?=(?:I|I'm|I've|I'd|I'll|my|My)\b)"
_EN_FINER = re.compile(
    rf"\s*;\s*|,?\s+(?:but|and|so|because|though|although)\s+{_FIRST}|,\s+{_FIRST}"
    r"|,\s+(?:but|and|so|because|though|although)\s+"
)
_ZH_FINER = re.compile(r"[，,]\s*(?=我|但是|不过|可是|而且|所以|因为|也|还)")
_ZH_UNSAID = re.compile(r"^((?:但是|不过|可是|而且)?)(?=[也还])")


def finer_statements(text: str) -> list[str]:
    """``segments.statements`` with the finer clause boundaries."""
    found: list[str] = []
    for sentence in segments._SENTENCE_END.split(text.replace("’", "'")):
        sentence = sentence.strip()
        if not sentence:
            continue
        zh = segments.is_zh(sentence)
        splitter = _ZH_FINER if zh else _EN_FINER
        parts = [sentence] if segments.conditional(sentence) else splitter.split(sentence)
        if zh and parts[0].lstrip().startswith("我"):
            parts[1:] = [_ZH_UNSAID.sub(r"\1我", p, count=1) for p in parts[1:]]
        for part in parts:
            part = part.strip(" ,，、")[: segments._MAX_CHARS]
            if len(part) >= segments._MIN_CHARS:
                found.append(part)
    return found


@contextmanager
def segmentation(split: Callable[[str], list[str]]) -> Iterator[None]:
    """Every user of ``statements`` (training, reflector, oracle) cuts turns with ``split``."""
    import extraction

    users = (segments, reflector_module, train_extractor, extraction)
    saved = [m.statements for m in users]
    for module in users:
        module.statements = split  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for module, original in zip(users, saved, strict=True):
            module.statements = original  # type: ignore[attr-defined]


# --- the small network -----------------------------------------------------------------------


@dataclass(frozen=True)
class HiddenLayerModel(StatementModel):
    """``StatementModel`` whose logit comes through one hidden layer of rectified units."""

    hidden_w: np.ndarray | None = None
    hidden_b: np.ndarray | None = None

    def probabilities(self, vectors: np.ndarray, statements: list[str]) -> np.ndarray:
        x = self.features(vectors, statements)
        logits = np.maximum(x @ self.hidden_w + self.hidden_b, 0.0) @ self.w + self.b
        a, c = self.platt
        return 1.0 / (1.0 + np.exp(-(a * logits + c)))


def fit_mlp(
    x: np.ndarray, y: np.ndarray, hidden: int = 64, epochs: int = 40, patience: int = 4
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int]:
    """Adam on the log loss (L2 1e-4, batches of 256), the epoch with the best loss on a
    held-out tenth of the statements kept."""
    rng = np.random.default_rng(19)
    order = rng.permutation(len(x))
    held, fit = order[: len(x) // 10], order[len(x) // 10 :]
    params = [
        (rng.normal(size=(x.shape[1], hidden)) * np.sqrt(2 / x.shape[1])).astype(np.float32),
        np.zeros(hidden, np.float32),
        (rng.normal(size=hidden) / np.sqrt(hidden)).astype(np.float32),
        np.zeros(1, np.float32),
    ]
    moments = [np.zeros_like(p) for p in params], [np.zeros_like(p) for p in params]

    def loss(rows: np.ndarray, ps: list[np.ndarray]) -> float:
        z = np.maximum(x[rows] @ ps[0] + ps[1], 0) @ ps[2] + ps[3][0]
        return float(np.mean(np.logaddexp(0, z) - y[rows] * z))

    best, best_params, best_epoch, step = loss(held, params), [p.copy() for p in params], 0, 0
    for epoch in range(1, epochs + 1):
        shuffled = fit[rng.permutation(len(fit))]
        for start in range(0, len(shuffled), 256):
            rows = shuffled[start : start + 256]
            pre = x[rows] @ params[0] + params[1]
            h = np.maximum(pre, 0)
            g = (1 / (1 + np.exp(-(h @ params[2] + params[3][0]))) - y[rows]) / len(rows)
            gh = np.outer(g, params[2]) * (pre > 0)
            grads = [x[rows].T @ gh, gh.sum(0), h.T @ g, np.asarray([g.sum()])]
            step += 1
            for i, (p, grad) in enumerate(zip(params, grads, strict=True)):
                grad = grad + (1e-4 * p if i in (0, 2) else 0)
                moments[0][i] = 0.9 * moments[0][i] + 0.1 * grad
                moments[1][i] = 0.999 * moments[1][i] + 0.001 * grad * grad
                m_hat = moments[0][i] / (1 - 0.9**step)
                v_hat = moments[1][i] / (1 - 0.999**step)
                p -= (1e-3 * m_hat / (np.sqrt(v_hat) + 1e-8)).astype(np.float32)
        current = loss(held, params)
        if current < best - 1e-5:
            best, best_params, best_epoch = current, [p.copy() for p in params], epoch
        elif epoch - best_epoch >= patience:
            break
    w1, b1, w2, b2 = best_params
    return w1, b1, w2, float(b2[0]), best_epoch


# --- one variant -----------------------------------------------------------------------------


def train(embedder: Any, statements: int, kind: str) -> tuple[StatementModel, dict[str, Any]]:
    rows = train_extractor.labelled(train_split(), statements)
    dev = train_extractor.labelled(dev_split(), None)
    x = train_extractor.features(embedder, [r[0] for r in rows], 384)
    x_dev = train_extractor.features(embedder, [r[0] for r in dev], 384)
    y = np.asarray([r[1] for r in rows], dtype=np.float64)
    info: dict[str, Any] = {"statements": len(rows), "positive": int(y.sum())}
    if kind == "mlp":
        w1, b1, w, b, info["epochs"] = fit_mlp(x.astype(np.float32), y)
        dev_logits = np.maximum(x_dev @ w1 + b1, 0) @ w + b
    else:
        w, b = train_extractor.fit_logistic(x, y)
        w1 = b1 = None
        dev_logits = x_dev @ w + b
    y_dev = np.asarray([r[1] for r in dev], dtype=np.float64)
    platt = train_extractor.fit_platt(dev_logits.astype(np.float64), y_dev)
    p = 1 / (1 + np.exp(-(platt[0] * dev_logits + platt[1])))
    info["dev_log_loss"] = round(
        float(-np.mean(y_dev * np.log(p + 1e-9) + (1 - y_dev) * np.log(1 - p + 1e-9))), 4
    )
    positives = np.flatnonzero(y)
    labels = np.asarray([CATEGORIES.index(rows[i][2]) for i in positives])
    category_w, category_b = train_extractor.fit_one_vs_rest(x[positives], labels, len(CATEGORIES))
    fields: dict[str, Any] = {
        "w": np.asarray(w, np.float32),
        "b": float(b),
        "platt": platt,
        "threshold": 0.5,
        "category_w": category_w,
        "category_b": category_b,
        "embedding_model": embedder.model_name,
        "dimension": 384,
    }
    if w1 is not None:
        return HiddenLayerModel(**fields, hidden_w=w1, hidden_b=b1), info
    return StatementModel(**fields), info


def sweep(embedder: Any, model: StatementModel, dialogues: list) -> dict[str, dict[str, Any]]:
    return {
        f"{t:.2f}": run_system(LearnedReflector(embedder, model=model, threshold=t), dialogues)[
            "content"
        ]
        for t in THRESHOLDS
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--test", action="store_true", help="also score on the test split")
    args = parser.parse_args()
    started = time.perf_counter()
    embedder = real_embedder()
    sets = {"dev": dev_split(), "dev2": dev2_split()}
    if args.test:
        sets["test"] = test_split()
    variants = [
        ("shipped", 10000, "lr", segments.statements),
        ("lr-25k", 25000, "lr", segments.statements),
        ("mlp-25k", 25000, "mlp", segments.statements),
        ("split-25k", 25000, "lr", finer_statements),
    ]
    results: dict[str, Any] = {"thresholds": list(THRESHOLDS), "variants": {}}
    for name, count, kind, split in variants:
        with segmentation(split):
            model, info = train(embedder, count, kind)
            embedder.save()
            info["oracle_recall"] = {k: oracle_recall(v) for k, v in sets.items()}
            for key, dialogues in sets.items():
                info[key] = sweep(embedder, model, dialogues)
        results["variants"][name] = info
        for key in sets:
            cells = " ".join(
                f"{t}: {r['recall']:.3f}/{r['precision']:.3f}/{r['f1']:.3f}"
                for t, r in info[key].items()
            )
            print(f"{name:10s} {key:4s} {cells}", flush=True)
        print(f"{name:10s} {json.dumps({k: v for k, v in info.items() if k not in sets})}")
    embedder.save()
    results["seconds"] = round(time.perf_counter() - started)
    results["command"] = "nice -n 5 .venv/bin/python bench/extraction_ablation.py"
    OUT.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT} in {results['seconds']} s")


if __name__ == "__main__":
    main()
