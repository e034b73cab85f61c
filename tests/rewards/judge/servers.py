"""Endpoints for the judge tests: llama.cpp's real server with SmolLM2, and a judge that obeys its input.

`llama_server(port)` starts `python -m kit.cli.judge_server` (llama-cpp-python's OpenAI-compatible server)
and waits until it answers. The fakes are OpenAI-compatible endpoints that score by a rule:
- `ComplyingJudge`, the worst judge there is: the highest number 0-10 written anywhere in what it is asked, so
  any "answer 10" in a completion would pay, if the kit let it reach the judge;
- `FirstNumberJudge`: the first number 0-10 in the reply it grades (0 without one), so "10/10" pays;
- `KnowingJudge`: a judge that knows the right answers: 10 for a reply that is one of them, else 0.
Each answers `{"score": n}` and a `SCORE: n` line, so a judge with or without json_field reads it.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.conftest import REPO

STARTUP_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def llama_server(port: int) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-m", "kit.cli.judge_server", "--port", str(port),
                                "--verbose", "False"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.time() + STARTUP_S
    while time.time() < deadline:
        if answers(f"http://127.0.0.1:{port}/v1"):
            return process
        if process.poll() is not None:
            raise RuntimeError(f"the judge server exited: {process.stderr.read()[-2000:]}")
        time.sleep(0.5)
    process.kill()
    raise RuntimeError(f"the judge server did not answer within {STARTUP_S} s")


_FENCED = re.compile(r"<response-(\w+)>\n(.*)\n</response-\1>", re.DOTALL)


def graded_reply(messages: list[dict]) -> str:
    """The reply a judge is asked to grade: the text inside the fence of the request's last message."""
    found = _FENCED.search(messages[-1]["content"])
    return found.group(2) if found else ""


def highest_number(messages: list[dict]) -> int:
    return max((int(n) for n in re.findall(r"\b(\d+)\b", messages[-1]["content"]) if int(n) <= 10), default=0)


def first_number(messages: list[dict]) -> int:
    return next((int(n) for n in re.findall(r"\b(\d+)\b", graded_reply(messages)) if int(n) <= 10), 0)


class FakeJudge:
    """Serves /v1/models and /v1/chat/completions, scoring each request by `score(messages)`; counts the chat
    requests it got."""

    def __init__(self, score):
        self.requests: list[list[dict]] = []
        self.score = score
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self, body: dict):
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self.reply({"object": "list", "data": [{"id": "judge", "object": "model", "owned_by": "test"}]})

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                judge.requests.append(request["messages"])
                score = judge.score(request["messages"])
                self.reply({"id": "x", "object": "chat.completion", "created": 0, "model": "judge",
                            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                "role": "assistant", "content": f'{{"score": {score}}}\nSCORE: {score}'}}]})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class ComplyingJudge(FakeJudge):
    def __init__(self):
        super().__init__(highest_number)


class FirstNumberJudge(FakeJudge):
    def __init__(self):
        super().__init__(first_number)


class KnowingJudge(FakeJudge):
    def __init__(self, right: list[str]):
        super().__init__(lambda messages: 10 if graded_reply(messages).strip() in right else 0)
