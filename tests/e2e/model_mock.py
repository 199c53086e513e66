"""A local stand-in for the Anthropic Messages API, enough to drive a real
Claude Code turn: each request that offers tools gets the next scripted
tool call (streamed as Claude Code reads it: message_start, a tool_use
block with its input as input_json_delta, message_delta with stop_reason
tool_use, message_stop); a request that carries a tool_result, or offers
no tools, gets a short text and end_turn. What the test scripts is one
tool call per `claude -p` run (`ModelMock.next_call`)."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ModelMock:
    def __init__(self):
        self.next_call = None  # (tool_use_id, tool name, input)
        self.requests = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()

    def _handler(mock):
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
                mock.requests.append((self.path, body))
                if not self.path.startswith("/v1/messages") or self.path.startswith("/v1/messages/count_tokens"):
                    return self._json({"input_tokens": 10})
                messages = body.get("messages", [])
                answered = any(isinstance(m.get("content"), list) and any(
                    isinstance(c, dict) and c.get("type") == "tool_result" for c in m["content"])
                    for m in messages)
                if body.get("tools") and not answered and mock.next_call:
                    blocks = [mock.next_call]
                    stop = "tool_use"
                else:
                    blocks = [("text", "done")]
                    stop = "end_turn"
                if body.get("stream"):
                    self._stream(blocks, stop, body.get("model", "claude"))
                else:
                    self._json(self._message(blocks, stop, body.get("model", "claude")))

            def _message(self, blocks, stop, model):
                content = []
                for block in blocks:
                    if block[0] == "text":
                        content.append({"type": "text", "text": block[1]})
                    else:
                        content.append({"type": "tool_use", "id": block[0], "name": block[1], "input": block[2]})
                return {"id": "msg_mock", "type": "message", "role": "assistant", "model": model,
                        "content": content, "stop_reason": stop, "stop_sequence": None,
                        "usage": {"input_tokens": 10, "output_tokens": 5}}

            def _json(self, value):
                data = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, blocks, stop, model):
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()

                def event(kind, data):
                    self.wfile.write(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())

                start = self._message([], None, model)
                start["usage"] = {"input_tokens": 10, "output_tokens": 1}
                event("message_start", {"type": "message_start", "message": start})
                for index, block in enumerate(blocks):
                    if block[0] == "text":
                        event("content_block_start", {"type": "content_block_start", "index": index,
                                                      "content_block": {"type": "text", "text": ""}})
                        event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                      "delta": {"type": "text_delta", "text": block[1]}})
                    else:
                        event("content_block_start", {"type": "content_block_start", "index": index,
                                                      "content_block": {"type": "tool_use", "id": block[0],
                                                                        "name": block[1], "input": {}}})
                        event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                      "delta": {"type": "input_json_delta",
                                                                "partial_json": json.dumps(block[2])}})
                    event("content_block_stop", {"type": "content_block_stop", "index": index})
                event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                        "usage": {"output_tokens": 5}})
                event("message_stop", {"type": "message_stop"})
                self.wfile.flush()

        return Handler
