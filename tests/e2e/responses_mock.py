"""A local stand-in for the OpenAI Responses API, enough to drive a real
Codex turn (`codex exec` with a custom model provider whose base_url is
this server): a `POST /v1/responses` whose input carries no tool output yet
gets the next scripted tool call, streamed as Codex reads it
(response.created, response.output_item.added and .done with the item,
response.completed); a request that carries the call's output (or when
nothing is scripted) gets a short assistant message. Codex 0.169.0 asks
nothing else of a custom provider; any other path gets an empty answer.
What the test scripts is one tool call per `codex exec` run
(`ResponsesMock.next_call`): a `function_call` item (`exec_command`, its
arguments a JSON string) or a `custom_tool_call` (`apply_patch`, its input
the patch)."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# The input item types that answer a tool call.
OUTPUTS = ("function_call_output", "custom_tool_call_output")


class ResponsesMock:
    def __init__(self):
        self.next_call = None  # an output item: a function_call or a custom_tool_call
        self.requests = []  # (method, path, body)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self):
        self.server.shutdown()

    def outputs(self, call_id):
        """The output Codex sent back for the call `call_id`, if any."""
        for _, _, body in self.requests:
            for item in (body or {}).get("input", []):
                if item.get("type") in OUTPUTS and item.get("call_id") == call_id:
                    return item["output"]
        return None

    def _handler(mock):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                mock.requests.append(("GET", self.path, None))
                self._json({"object": "list", "data": [], "models": []})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
                mock.requests.append(("POST", self.path, body))
                if not self.path.startswith("/v1/responses"):
                    return self._json({})
                answered = any(i.get("type") in OUTPUTS for i in body.get("input", []))
                if mock.next_call and not answered:
                    item = mock.next_call
                else:
                    item = {"type": "message", "role": "assistant", "id": "msg_mock",
                            "content": [{"type": "output_text", "text": "done"}]}
                self._stream(item)

            def _json(self, value):
                data = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, item):
                events = [
                    {"type": "response.created", "response": {"id": "resp_mock"}},
                    {"type": "response.output_item.added", "output_index": 0, "item": item},
                    {"type": "response.output_item.done", "output_index": 0, "item": item},
                    {"type": "response.completed", "response": {
                        "id": "resp_mock", "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}},
                ]
                data = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
