"""A real local model server for the tests and the bench: llama-cpp-python's OpenAI-compatible
server with SmolLM2-135M-Instruct, both built by `.ci/local-model` into a cache outside the
checkout (see that script). Started on a free port, stopped (by its own pid) on exit.

    with LocalServer.start() as server:
        server.configs_file(tmp / "configs.yaml")   # BRAIN_LLM_CONFIGS, BRAIN_LLM=local
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

LLAMA_VERSION = "0.3.36"  # the same as .ci/local-model
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CHAT_FORMAT = "chatml-function-calling"  # llama-cpp-python's OpenAI-style tool calling
CONTEXT = 8192  # SmolLM2's window; the default 2048 is shorter than one request
STARTUP_SECONDS = 120.0
# One thread by default: on a shared 2-core machine llama.cpp's threads spin-wait on each
# other and a second thread makes it many times slower; BRAIN_LLAMA_THREADS sets more.


def llama_home() -> Path:
    """Where .ci/local-model put this version's build (it may not be there)."""
    root = Path(os.environ.get("BRAIN_LLAMA_CACHE")
                or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                / "brain-llama")
    return root / f"{LLAMA_VERSION}-{os.uname().machine}"


def built() -> bool:
    return (llama_home() / "ready").is_file()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalServer:
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @classmethod
    def start(cls, log_path: Path | None = None, threads: int | None = None) -> LocalServer:
        home = llama_home()
        if not built():
            raise RuntimeError(f"no local model build in {home}: run `bash .ci/local-model`")
        port = _free_port()
        log_path = log_path or Path(os.environ.get("TMPDIR", "/tmp")) / f"llama-{port}.log"
        log = log_path.open("wb")
        process = subprocess.Popen(
            [str(home / "venv" / "bin" / "python"), "-m", "llama_cpp.server",
             "--model", str(home / "model" / MODEL_FILE), "--chat_format", CHAT_FORMAT,
             "--n_ctx", str(CONTEXT), "--host", "127.0.0.1", "--port", str(port),
             "--n_threads", str(threads or int(os.environ.get("BRAIN_LLAMA_THREADS", "1"))),
             "--seed", "7"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        server = cls(process, port, log_path)
        server._wait_ready()
        return server

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the model server exited: {self.log_tail()}")
            try:
                with urllib.request.urlopen(self.base_url + "/models", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the model server did not start in {STARTUP_SECONDS:.0f} s")

    def up(self) -> bool:
        """Is the server still answering?"""
        try:
            with urllib.request.urlopen(self.base_url + "/models", timeout=5) as answer:
                return answer.status == 200
        except OSError:
            return False

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def configs_file(self, path: Path, *, config_id: str = "local") -> Path:
        """A BRAIN_LLM_CONFIGS file naming this server (no key: a local server needs none)."""
        path.write_text(yaml.safe_dump({"configs": [{
            "id": config_id, "provider": "openai", "model": "smollm2-135m",
            "base_url": self.base_url, "dialect": "llama-cpp", "timeout": 300,
            "max_retries": 0}]}), encoding="utf-8")
        return path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
