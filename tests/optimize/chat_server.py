#!/usr/bin/python3
"""A scripted OpenAI Chat Completions server for the tests of `steptp optimize`.

Usage: chat_server.py SCRIPT.json LOG.jsonl
Listens on 127.0.0.1 (a free port, printed as the first line of stdout) and answers each POST to
/v1/chat/completions with the next entry of SCRIPT (a JSON list), in arrival order:
  {"content": "...", "completion_tokens": N}   a 200 reply with that message content
  {"content_repeat": ["x", N]}                 a 200 reply whose content is "x" * N (huge output)
  {"status": 429 | 500, "body": "..."}          an HTTP error
  {"delay_s": S, ...}                           waits S seconds first (a hang past the timeout)
When the script is exhausted it answers 500. Every request body is appended to LOG (one JSON
object per line), so a test can check what was sent (model, messages, max_tokens, ...).
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

script = json.load(open(sys.argv[1]))
log_path = sys.argv[2]
lock = threading.Lock()
served = [0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with lock:
            i = served[0]
            served[0] += 1
            with open(log_path, "a") as f:
                f.write(json.dumps({"path": self.path, "body": json.loads(body)}) + "\n")
        entry = script[i] if i < len(script) else {"status": 500, "body": "script exhausted"}
        if entry.get("delay_s"):
            time.sleep(entry["delay_s"])
        status = entry.get("status", 200)
        if status != 200:
            self.reply(status, entry.get("body", "error").encode())
            return
        content = entry.get("content", "")
        if "content_repeat" in entry:
            content = entry["content_repeat"][0] * entry["content_repeat"][1]
        reply = {
            "id": "chatcmpl-%d" % i,
            "object": "chat.completion",
            "model": json.loads(body).get("model", ""),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": entry.get("completion_tokens", 10),
                      "total_tokens": 100 + entry.get("completion_tokens", 10)},
        }
        self.reply(200, json.dumps(reply).encode())

    def reply(self, status, data):
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): expected in the hang case


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
