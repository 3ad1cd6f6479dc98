"""In-process BM25 over one partition's documents: an inverted index of numpy-scannable postings.

Why not SQLite FTS5 at query time: FTS5 calls its ``bm25()`` function once per matching
row, so a query whose terms are common in a large partition (100k memories of one user)
spent ~40 ms ranking. Here a term's postings are one ``array('q')`` of packed
``doc << 16 | tf`` values that numpy reads without copying, so scoring a term costs a few
vectorised operations over its postings (microseconds for thousands of postings).

Documents are numbered in insertion order (``doc``); ``row_of_doc`` maps a doc number to
the partition row that holds it (or -1 once removed), so the partition may move rows
around (swap-with-last) without touching postings. Removed documents leave dead postings
behind; they are skipped while scoring (document frequency counts live documents only)
and dropped by ``compact`` once they outnumber the live ones.

Scoring is Okapi BM25 with Lucene's non-negative idf, ``log(1 + (N - n + 0.5) / (n + 0.5))``,
k1 = 1.2 and b = 0 (no length normalisation: ``backend_rules.BM25_B``), over the partition's
live documents.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Sequence

import numpy as np

from hindsight.adapters.backend_rules import BM25_B, BM25_K1

__all__ = ["BM25_B", "BM25_K1", "Postings"]
_TF_BITS = 16
_TF_MASK = (1 << _TF_BITS) - 1


class Postings:
    """Term -> packed (doc, tf) postings of one partition, plus per-doc lengths."""

    def __init__(self) -> None:
        self.terms: dict[str, array] = {}
        self.row_of_doc = np.zeros(16, dtype=np.int64)
        self.length_of_doc = np.zeros(16, dtype=np.int32)
        self.next_doc = 0
        self.live = 0
        self.dead = 0  # removed documents whose postings are still stored
        self.total_length = 0

    def add(self, row: int, terms: Sequence[str]) -> int:
        """Index ``terms`` as a new document held at ``row``; returns its doc number."""
        doc = self.next_doc
        self.next_doc += 1
        if doc == len(self.row_of_doc):
            self.row_of_doc = np.concatenate([self.row_of_doc, np.full(doc, -1, np.int64)])
            self.length_of_doc = np.concatenate([self.length_of_doc, np.zeros(doc, np.int32)])
        self.row_of_doc[doc] = row
        self.length_of_doc[doc] = len(terms)
        packed = doc << _TF_BITS
        for term, count in Counter(terms).items():
            postings = self.terms.get(term)
            if postings is None:
                postings = self.terms[term] = array("q")
            postings.append(packed | min(count, _TF_MASK))
        self.live += 1
        self.total_length += len(terms)
        return doc

    def remove(self, doc: int) -> None:
        if self.row_of_doc[doc] < 0:
            return
        self.row_of_doc[doc] = -1
        self.live -= 1
        self.dead += 1
        self.total_length -= int(self.length_of_doc[doc])
        if self.dead > max(self.live, 1_000):
            self.compact()

    def move(self, doc: int, row: int) -> None:
        """The document's row changed (the partition swapped rows)."""
        self.row_of_doc[doc] = row

    def compact(self) -> None:
        """Drop the postings of removed documents (doc numbers stay as they are)."""
        for term in list(self.terms):
            packed = np.frombuffer(self.terms[term], dtype=np.int64)
            kept = packed[self.row_of_doc[packed >> _TF_BITS] >= 0]
            del packed
            if len(kept):
                self.terms[term] = array("q", kept.tobytes())
            else:
                del self.terms[term]
        self.dead = 0

    def scores(self, query_terms: Sequence[str], rows: int) -> np.ndarray:
        """BM25 score of every partition row (0 where no query term occurs); shape (rows,)."""
        scores = np.zeros(rows, dtype=np.float64)
        if self.live == 0:
            return scores
        average = max(self.total_length / self.live, 1e-9)
        for term in dict.fromkeys(query_terms):
            stored = self.terms.get(term)
            if not stored:
                continue
            packed = np.frombuffer(stored, dtype=np.int64)
            docs = packed >> _TF_BITS
            row = self.row_of_doc[docs]
            alive = row >= 0
            if not alive.all():
                docs, row = docs[alive], row[alive]
                packed = packed[alive]
            count = len(row)
            if count == 0:
                continue
            tf = (packed & _TF_MASK).astype(np.float64)
            del packed  # release the view of the array('q') so it can grow again
            idf = np.log1p((self.live - count + 0.5) / (count + 0.5))
            norm = BM25_K1 * (1.0 - BM25_B + BM25_B * self.length_of_doc[docs] / average)
            scores[row] += idf * tf * (BM25_K1 + 1.0) / (tf + norm)
        return scores
