#!/usr/bin/env python3
"""A scripted stand-in for the model APIs of the real hosts (Python 3.11 stdlib only).

It speaks three wire formats on 127.0.0.1:
  * OpenAI Responses SSE          POST .../responses                    (Codex CLI)
  * Anthropic Messages SSE        POST .../messages                     (Claude Code)
  * Gemini streamGenerateContent  POST ...:streamGenerateContent/...    (Gemini CLI)

Every request is appended, as one JSON line {"path", "body"}, to the record file.

The agent's turn is scripted through the conversation itself:
  * when the newest message is a tool result, the reply is a final text: the `text` of
    an `E2E_FINAL<<text>>` in the newest user text before it (outside an `E2E_TOOL`
    call's input, so a spawned worker's script does not end its parent's turn), else
    "E2E_DONE";
  * when the newest user text holds `E2E_SHELL<<cmd>>`, the reply is one call of the
    host's shell tool running `cmd`;
  * when it holds `E2E_TOOL<<name>><<json>>`, the reply calls tool `name` with that input
    (a tool inside a Responses `namespace` is called with its namespace);
  * when the newest message is a Codex `spawn_agent` result, the reply waits for that
    agent (`wait_agent`), so the worker runs before the turn ends;
  * otherwise the reply is the final text "E2E_DONE".
Only the newest user message counts, so a hook's block reason (which arrives as the next
user message) ends in a final text and the host's own loop guard ends the turn.

The server stops by itself after --lifetime seconds.
"""

import argparse
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SHELL_RE = re.compile(r"E2E_SHELL<<(.+?)>>", re.S)
TOOL_RE = re.compile(r"E2E_TOOL<<([A-Za-z0-9_.\-]+)>><<", re.S)
FINAL_RE = re.compile(r"E2E_FINAL<<(.+?)>>", re.S)
LOCK = threading.Lock()
COUNTER = [0]


def next_id(prefix):
    with LOCK:
        COUNTER[0] += 1
        return f"{prefix}{COUNTER[0]}"


def text_of(content):
    """Flattens any message content shape into one string."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(c) for c in content)
    if isinstance(content, dict):
        parts = []
        for key in ("text", "content", "parts", "output"):
            if key in content:
                parts.append(text_of(content[key]))
        return "\n".join(parts)
    return ""


def tool_marker(text):
    """The first `E2E_TOOL<<name>><<json>>` as (name, input, start, end), or None.

    The input may itself hold `>>` (a worker's scripted `E2E_SHELL<<…>>`): the input
    ends at the first `>>` after which the text parses as JSON.
    """
    m = TOOL_RE.search(text)
    if not m:
        return None
    at = m.end()
    while True:
        end = text.find(">>", at)
        if end < 0:
            return None
        try:
            return (m.group(1), json.loads(text[m.end():end]), m.start(), end + 2)
        except ValueError:
            at = end + 1


def final_text(newest):
    """The scripted final message of a turn whose user text is `newest`."""
    t = tool_marker(newest)
    if t:
        newest = newest[:t[2]] + newest[t[3]:]
    m = FINAL_RE.search(newest)
    return m.group(1) if m else "E2E_DONE"


def user_text_before_results(kind, body):
    """The newest user text that is not a tool result."""
    if kind == "openai":
        users = [i for i in body.get("input") or [] if i.get("role") == "user"]
        return text_of(users[-1].get("content")) if users else ""
    if kind == "anthropic":
        for msg in reversed(body.get("messages") or []):
            c = msg.get("content")
            if msg.get("role") != "user":
                continue
            if isinstance(c, list):
                texts = [x for x in c if isinstance(x, dict) and x.get("type") == "text"]
                if texts:
                    return text_of(texts)
                continue
            return text_of(c)
        return ""
    for msg in reversed(body.get("contents") or []):
        parts = msg.get("parts") or []
        if msg.get("role") == "user" and any("text" in p for p in parts):
            return "\n".join(p.get("text", "") for p in parts)
    return ""


def spawned_agent(output):
    """The agent id of a Codex `spawn_agent` result, else None."""
    try:
        v = json.loads(output) if isinstance(output, str) else None
    except ValueError:
        return None
    return v.get("agent_id") if isinstance(v, dict) and "nickname" in v else None


def namespaced_tools(body):
    return [x.get("name") for t in body.get("tools") or [] if t.get("type") == "namespace"
            for x in t.get("tools") or []]


def plan(kind, body):
    """Returns ("text", str) or ("tool", name, input) for the newest turn."""
    if kind == "openai":
        items = body.get("input") or []
        last = items[-1] if items else {}
        if last.get("type") in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            spawned = spawned_agent(last.get("output"))
            if spawned and "wait_agent" in namespaced_tools(body):
                # Codex's spawn_agent returns at once; wait for the worker before ending.
                return ("tool", "wait_agent", {"targets": [spawned], "timeout_ms": 60000})
            return ("text", final_text(user_text_before_results(kind, body)))
        users = [i for i in items if i.get("role") == "user"]
        newest = text_of(users[-1].get("content")) if users else ""
    elif kind == "anthropic":
        msgs = body.get("messages") or []
        last = msgs[-1] if msgs else {}
        content = last.get("content")
        if isinstance(content, list) and any(
            isinstance(c, dict) and c.get("type") == "tool_result" for c in content
        ):
            return ("text", final_text(user_text_before_results(kind, body)))
        newest = text_of(content) if last.get("role") == "user" else ""
    else:
        contents = body.get("contents") or []
        last = contents[-1] if contents else {}
        parts = last.get("parts") or []
        if any("functionResponse" in p for p in parts):
            return ("text", final_text(user_text_before_results(kind, body)))
        newest = "\n".join(p.get("text", "") for p in parts) if last.get("role") == "user" else ""
    t = tool_marker(newest)
    if t:
        return ("tool", t[0], t[1])
    m = SHELL_RE.search(newest)
    if m:
        return ("shell", m.group(1))
    return ("text", "E2E_DONE")


def tool_names(kind, body):
    tools = body.get("tools") or []
    names = []
    for t in tools:
        if kind == "gemini":
            for d in t.get("functionDeclarations") or []:
                names.append(d.get("name"))
        else:
            names.append(t.get("name") or (t.get("function") or {}).get("name") or t.get("type"))
    return [n for n in names if n]


def shell_call(kind, body, cmd):
    names = tool_names(kind, body)
    if kind == "anthropic":
        return ("tool", "Bash", {"command": cmd, "description": "e2e"})
    if kind == "gemini":
        return ("tool", "run_shell_command", {"command": cmd, "description": "e2e"})
    for name, args in (
        ("exec_command", {"cmd": cmd}),
        ("shell_command", {"command": cmd}),
        ("shell", {"command": ["bash", "-lc", cmd]}),
    ):
        if name in names:
            return ("tool", name, args)
    return ("tool", "exec_command", {"cmd": cmd})


# ---- encoders -------------------------------------------------------------------------


def sse(handler, events):
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.end_headers()
    for name, data in events:
        chunk = ""
        if name:
            chunk += f"event: {name}\n"
        chunk += f"data: {json.dumps(data)}\n\n"
        handler.wfile.write(chunk.encode())
    handler.wfile.flush()
    handler.close_connection = True


def openai_events(body, p):
    rid = next_id("resp_")
    model = body.get("model", "mock")
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    ev = [("response.created", {"type": "response.created", "response": {"id": rid, "model": model, "status": "in_progress"}})]
    if p[0] == "text":
        mid = next_id("msg_")
        item = {"type": "message", "id": mid, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": p[1], "annotations": []}]}
        ev.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                                  "item": {**item, "status": "in_progress", "content": []}}))
        ev.append(("response.output_text.delta", {"type": "response.output_text.delta", "item_id": mid,
                                                  "output_index": 0, "content_index": 0, "delta": p[1]}))
        ev.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}))
    else:
        cid = next_id("call_")
        item = {"type": "function_call", "id": next_id("fc_"), "call_id": cid, "name": p[1],
                "arguments": json.dumps(p[2]), "status": "completed"}
        # A tool inside a namespace (Codex's `multi_agent_v1`) is called with its namespace.
        for t in body.get("tools") or []:
            if t.get("type") == "namespace" and any(x.get("name") == p[1] for x in t.get("tools") or []):
                item["namespace"] = t["name"]
        ev.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}))
        ev.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}))
    ev.append(("response.completed", {"type": "response.completed",
                                      "response": {"id": rid, "model": model, "status": "completed", "usage": usage}}))
    return ev


def anthropic_events(body, p):
    mid = next_id("msg_")
    model = body.get("model", "mock")
    ev = [("message_start", {"type": "message_start", "message": {
        "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1}}})]
    if p[0] == "text":
        ev.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}}))
        ev.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "text_delta", "text": p[1]}}))
        stop = "end_turn"
    else:
        ev.append(("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": next_id("toolu_"), "name": p[1], "input": {}}}))
        ev.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "input_json_delta", "partial_json": json.dumps(p[2])}}))
        stop = "tool_use"
    ev.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    ev.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                 "usage": {"output_tokens": 5}}))
    ev.append(("message_stop", {"type": "message_stop"}))
    return ev


def gemini_events(body, p):
    if p[0] == "text":
        part = {"text": p[1]}
    else:
        part = {"functionCall": {"name": p[1], "args": p[2]}}
    return [(None, {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
                    "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
                    "modelVersion": "gemini-2.5-flash"})]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    record = None

    def log_message(self, *args):
        pass

    def _read(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {"_raw": raw.decode("utf-8", "replace")}

    def _json(self, obj, code=200):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with LOCK, open(self.record, "a") as f:
            f.write(json.dumps({"method": "GET", "path": self.path}) + "\n")
        if "/models" in self.path:
            self._json({"data": [], "models": []})
        else:
            self._json({})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        body = self._read()
        with LOCK, open(self.record, "a") as f:
            f.write(json.dumps({"method": "POST", "path": self.path, "body": body}) + "\n")
        path = self.path.split("?")[0]
        if path.endswith("/responses"):
            kind = "openai"
        elif path.endswith("/messages"):
            kind = "anthropic"
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            kind = "gemini"
        elif path.endswith("/count_tokens") or ":countTokens" in path:
            self._json({"input_tokens": 10, "totalTokens": 10})
            return
        else:
            self._json({})
            return
        p = plan(kind, body)
        if p[0] == "shell":
            p = shell_call(kind, body, p[1])
        if kind == "anthropic" and not body.get("stream"):
            # Side requests (titles, quota probes): a plain JSON reply.
            self._json({"id": next_id("msg_"), "type": "message", "role": "assistant", "model": body.get("model"),
                        "content": [{"type": "text", "text": "E2E_DONE"}], "stop_reason": "end_turn",
                        "usage": {"input_tokens": 1, "output_tokens": 1}})
            return
        if kind == "gemini" and ":generateContent" in path:
            self._json(gemini_events(body, p)[0][1])
            return
        enc = {"openai": openai_events, "anthropic": anthropic_events, "gemini": gemini_events}[kind]
        sse(self, enc(body, p))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--record", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--lifetime", type=float, default=900)
    a = ap.parse_args()
    Handler.record = a.record
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.replace(a.port_file + ".tmp", a.port_file)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    time.sleep(a.lifetime)
    srv.shutdown()
    sys.exit(0)


if __name__ == "__main__":
    main()
