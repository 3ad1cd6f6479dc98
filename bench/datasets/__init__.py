"""Generators of the benchmarks' data: each builds a dataset from seeded templates and word
lists written for this project (and, where its docstring says so, MSC dialogues).

The scripts one level up import them as ``datasets.<name>`` (``bench/`` is on their path).
``python bench/datasets/updates_data.py`` rewrites ``bench/data/updates/cases.json``; the
long-memory pieces are assembled by ``bench/longmem_data.py``, which the dev sets read. The
templates and word lists themselves are data: ``tables/<module>.json`` (``tables``).
"""
