"""Deterministic stand-ins for LLMs in the generation tests: :class:`ScriptedLLM` reads the
prompt like a model would, and :class:`FakeOpenAIServer` serves it over a real
OpenAI-compatible HTTP endpoint on loopback, injecting the failures real APIs produce."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from toolsense.generation.llm import parse_json_reply


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]{4,}", text.lower()))


class ScriptedLLM:
    """Writes from the tool descriptions in the prompt; the RRB writer picks its answer set as
    the anchor plus the pool tools sharing most words with it (as many as the tier asks); the
    RRB judge gives full marks and confirms the proposed set."""

    name = "scripted"

    def __init__(self, leak_every: int = 0):
        self.calls = 0
        self.leak_every = leak_every

    def __call__(self, messages, *, temperature=0.0, seed=0, **kw):
        self.calls += 1
        text = messages[-1]["content"]
        cards = re.findall(r"^(?:- |\d+\. )(.+?) / (.+?): (.+)$", text, flags=re.M)
        if text.startswith("Request:"):  # RRB judge
            proposed = json.loads(re.search(r"Proposed answer set: (\[.*?\])", text).group(1))
            return json.dumps({"naturalness": 5, "tier_compliance": 5, "label_correctness": 5, "satisfying": proposed})
        if "Which option is correct" in text:
            return json.dumps({"answer": "ABCD"[[ln.startswith(("A.", "B.", "C.", "D.")) and "CORRECT" in ln
                                                 for ln in text.splitlines() if ln[:2] in ("A.", "B.", "C.", "D.")].index(True)]})
        if "Reply as JSON: {\"answer\": \"Yes\"|\"No\"}" in text:
            return json.dumps({"answer": "Yes" if "YES-FACT" in text else "No"})
        desc = " ".join(cards[0][2].lower().split()[:6]) if cards else ""
        if "multiple-choice" in text:
            return json.dumps({"question": f"Which statement fits a tool that can {desc}?",
                               "correct_answer": "CORRECT: " + cards[0][2][:40],
                               "wrong_answers": [c[2][:40] for c in cards[1:4]]})
        if "yes/no question" in text:
            if "answer is Yes" in text:
                return json.dumps({"question": f"Can this tool YES-FACT {desc}?", "answer": "Yes"})
            return json.dumps({"question": f"Is this tool unable to {desc}?", "answer": "No"})
        return self._rrb(text, cards)

    def _rrb(self, text: str, cards: list) -> str:
        anchor, pool = cards[0], cards[1:]
        size = 1 if "exactly 1 tool" in text else 2 if "2 or 3 tools" in text else 4
        me = pool.index(anchor)
        ranked = sorted((i for i in range(len(pool)) if i != me), key=lambda i: (-len(_words(pool[i][2]) & _words(anchor[2])), i))
        chosen = [me] + ranked[: size - 1]
        if self.leak_every and self.calls % self.leak_every == 0:
            return json.dumps({"query": f"please use {anchor[0]} to do this for me", "tools": [i + 1 for i in chosen]})
        words = " ".join(pool[i][2] for i in chosen).split()[:20]
        return "Sure! " + json.dumps({"query": "I want to " + " ".join(words), "tools": [i + 1 for i in chosen]})


CONTEXT_400 = {"error": {"message": "This model's maximum context length is 8192 tokens", "type": "invalid_request_error",
                         "code": "context_length_exceeded"}}


def api_title(tool) -> str:
    return tool.api_title or tool.api


def _tool_of(text: str) -> str:
    """The first tool card's API title in a prompt: what the fault plan is keyed by."""
    m = re.search(r"^(?:- |\d+\. )(.+?) / (.+?):", text, flags=re.M)
    return m.group(2) if m else ""


class FakeOpenAIServer:
    """``/v1/chat/completions`` on 127.0.0.1 (a free port), replying as :class:`ScriptedLLM`.

    ``faults`` maps an API title (the first tool card in a writer prompt) to a fault:
    ``malformed`` (not JSON), ``http500_once`` (500 on a body's first request), ``http400``
    (context length, always), ``timeout_once`` (sleeps past the client time-out once),
    ``truncated`` (``finish_reason=length``, half a JSON object), ``leak`` (the query names
    the service), ``copy:<title>`` (the last reply given for that title's prompt: a duplicate), ``wrong_count`` (an MCQ
    with two wrong answers);
    ``echo_key`` (400 whose body echoes the request's ``Authorization`` header and bare key, as
    some endpoints do: "Incorrect API key provided");
    ``judge_garbled=True`` makes every temperature-0 judge reply prose (the retry parses).
    ``refuse`` maps a ``response_format`` type to the status it is refused with (a body naming
    it, as llama-cpp-python's 500 to ``json_schema``); ``no_schema`` refuses both with 400.
    ``gate`` (an Event) holds every reply until it is set; ``waiting`` counts the requests held.
    Every request body is recorded (``requests``) with its status."""

    def __init__(self, faults: dict[str, str] | None = None, *, no_schema: bool = False, judge_garbled: bool = False,
                 delay_s: float = 0.0, sleep_s: float = 2.0, gate: threading.Event | None = None,
                 refuse: dict[str, int] | None = None):
        self.faults, self.judge_garbled = faults or {}, judge_garbled
        self.refuse = {"json_schema": 400, "json_object": 400} if no_schema else dict(refuse or {})
        self.delay_s, self.sleep_s = delay_s, sleep_s
        self.gate, self.waiting = gate, 0
        self.llm = ScriptedLLM()
        self.requests: list[dict] = []
        self.last_reply: dict[str, str] = {}
        self.seen: Counter = Counter()
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if server.gate is not None and not server.gate.is_set():
                    with server.lock:
                        server.waiting += 1
                    server.gate.wait()
                status, payload = server.reply(body, self.headers.get("Authorization", ""))
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def reply(self, body: dict, auth: str = "") -> tuple[int, dict]:
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        text = body["messages"][-1]["content"]
        judging = text.startswith("Request:") or "Which option is correct" in text or "Reply as JSON: {\"answer\": \"Yes\"|\"No\"}" in text
        fault = None if judging else self.faults.get(_tool_of(text))
        with self.lock:
            self.seen[digest] += 1
            first = self.seen[digest] == 1
        status, content, finish = 200, None, "stop"
        refused = self.refuse.get((body.get("response_format") or {}).get("type"))
        if refused:
            status = refused
        elif fault in ("http400", "echo_key"):
            status = 400
        elif fault == "http500_once" and first:
            status = 500
        elif fault == "timeout_once" and first:
            time.sleep(self.sleep_s)
        if status == 200:
            time.sleep(self.delay_s)
            content = self._content(body, text, fault, judging)
            if fault == "truncated":
                content, finish = content[: len(content) // 2], "length"
        with self.lock:
            self.requests.append({"digest": digest, "status": status, "fault": fault, "body": body, "auth": auth})
        if refused:
            kind = body["response_format"]["type"]
            return status, {"error": {"message": f"response_format type {kind} is not supported", "type": "invalid_request_error"}}
        if fault == "echo_key":
            return 400, {"error": {"message": f"Incorrect API key provided: {auth.split()[-1]}. Request headers: "
                                              f"{{'Authorization': '{auth}'}}", "type": "invalid_request_error"}}
        if status == 400:
            return 400, CONTEXT_400
        if status == 500:
            return 500, {"error": {"message": "internal error", "type": "server_error"}}
        return 200, {"id": "cmpl-" + digest[:8], "object": "chat.completion", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": content}}],
                     "usage": {"prompt_tokens": len(text.split()), "completion_tokens": len(content.split()),
                               "total_tokens": len(text.split()) + len(content.split())}}

    def _content(self, body: dict, text: str, fault: str | None, judging: bool) -> str:
        if judging and self.judge_garbled and body.get("temperature", 0) == 0:
            return "I think the answer is probably the third one."
        reply = self.llm(body["messages"], temperature=body.get("temperature", 0), seed=body.get("seed", 0))
        if fault == "malformed":
            return "Sure! {query: " + reply[:20]
        if fault == "leak":
            return json.dumps({"query": f"please use {_service_of(text)} to do this for me", "tools": parse_json_reply(reply)["tools"]})
        if fault and fault.startswith("copy:"):
            return self.last_reply[fault[5:]]
        if "Write ONE short" in text:
            self.last_reply[_tool_of(text)] = reply
        if fault == "wrong_count" and "multiple-choice" in text:
            obj = json.loads(reply)
            obj["wrong_answers"] = obj["wrong_answers"][:2]
            return json.dumps(obj)
        return reply


def _service_of(text: str) -> str:
    m = re.search(r"^(?:- |\d+\. )(.+?) / ", text, flags=re.M)
    return m.group(1) if m else "the service"


class HandLLM:
    """Hand-made replies by pipeline stage, in order: ``HandLLM(rrb_writer=[{...}], rrb_judge=[{...}])``;
    dicts are sent as JSON. Records every prompt it was shown (``prompts[stage]``)."""

    name = "hand"

    def __init__(self, **replies):
        self.replies = {k: list(v) for k, v in replies.items()}
        self.prompts: dict[str, list[str]] = {}

    def __call__(self, messages, *, temperature=0.0, seed=0, schema=None, stage=""):
        self.prompts.setdefault(stage, []).append(messages[-1]["content"])
        reply = self.replies[stage].pop(0)
        return reply if isinstance(reply, str) else json.dumps(reply)
