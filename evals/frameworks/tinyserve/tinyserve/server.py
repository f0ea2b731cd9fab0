"""The HTTP layer: OpenAI-compatible endpoints over HTTP/1.1 keep-alive, SSE streaming with chunked encoding."""
from __future__ import annotations

import json
import logging
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tinyserve.engine import Engine, RequestError
from tinyserve.openai_api import ResponseShapes, parse_request, usage
from tinyserve.tokenizer import ByteTokenizer

log = logging.getLogger("tinyserve.server")


class ServerState:
    def __init__(self, engine: Engine, tokenizer: ByteTokenizer, model_name: str):
        self.engine, self.tokenizer, self.model_name = engine, tokenizer, model_name


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "tinyserve"
    state: ServerState  # set on the subclass made by make_server

    def log_message(self, fmt: str, *args) -> None:
        log.info("%s %s", self.address_string(), fmt % args)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._json(200, {"status": "ok"})
        elif self.path == "/v1/models":
            config = self.state.engine.model.config
            self._json(200, {"object": "list", "data": [{
                "id": self.state.model_name, "object": "model", "owned_by": "tinyserve",
                "max_model_len": config.max_position_embeddings}]})
        else:
            self._error(404, f"no route GET {self.path}")

    def do_POST(self) -> None:
        routes = {"/v1/completions": False, "/v1/chat/completions": True}
        if self.path not in routes:
            self._error(404, f"no route POST {self.path}")
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
            req = parse_request(body, routes[self.path], self.state.tokenizer, self.state.model_name)
            generation = self.state.engine.generate(req.prompt_ids, req.max_tokens, req.ignore_eos)
        except json.JSONDecodeError as exc:
            self._error(400, f"request body is not JSON: {exc}")
            return
        except RequestError as exc:
            self._error(400, str(exc))
            return
        shapes = ResponseShapes(req)
        if req.stream:
            self._stream(req, generation, shapes)
            return
        tokens = list(generation)
        use = usage(len(req.prompt_ids), generation.completion_tokens, generation.cached_tokens)
        self._json(200, shapes.full(self.state.tokenizer.decode(tokens), generation.finish_reason, use))

    def _stream(self, req, generation, shapes: ResponseShapes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        first = True
        for token in generation:
            last = generation.completion_tokens >= req.max_tokens or (
                token == self.state.engine.eos_token_id and not req.ignore_eos)
            reason = ("stop" if token == self.state.engine.eos_token_id and not req.ignore_eos else "length") \
                if last else None
            self._event(shapes.chunk(self.state.tokenizer.decode([token]), reason, first))
            first = False
        if req.include_usage:
            self._event(shapes.usage_chunk(
                usage(len(req.prompt_ids), generation.completion_tokens, generation.cached_tokens)))
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")

    def _event(self, obj: dict) -> None:
        self._write_chunk(b"data: " + json.dumps(obj).encode() + b"\n\n")

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _json(self, status: int, obj: dict) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"object": "error", "message": message, "type": "BadRequestError", "code": status})


class Server(ThreadingHTTPServer):
    # socketserver's default backlog is 5: a burst of new connections (a benchmark opening its pool,
    # the data-parallel router forwarding a wave of requests) would see SYNs dropped and retried a
    # second later, which shows up as 1 s of TTFT.
    request_queue_size = 1024
    daemon_threads = True


def make_server(host: str, port: int, state: ServerState) -> ThreadingHTTPServer:
    handler = type("BoundHandler", (Handler,), {"state": state})
    server = Server((host, port), handler)
    return server
