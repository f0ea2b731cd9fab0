"""OpenAI-compatible request parsing and response/chunk shapes for completions and chat."""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from tinyserve.engine import RequestError
from tinyserve.tokenizer import ByteTokenizer


@dataclass
class ParsedRequest:
    chat: bool
    prompt_ids: list[int]
    max_tokens: int
    ignore_eos: bool
    stream: bool
    include_usage: bool
    model: str


def parse_request(body: dict, chat: bool, tokenizer: ByteTokenizer, model_name: str) -> ParsedRequest:
    """Turn a /v1/completions or /v1/chat/completions body into engine inputs (RequestError if malformed)."""
    if not isinstance(body, dict):
        raise RequestError("The request body must be a JSON object")
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise RequestError("'messages' must be a non-empty list")
        prompt_ids = tokenizer.apply_chat_template(messages)
    else:
        prompt_ids = _prompt_ids(body.get("prompt"), tokenizer)
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or 16
    if not isinstance(max_tokens, int):
        raise RequestError("'max_tokens' must be an integer")
    options = body.get("stream_options") or {}
    return ParsedRequest(chat=chat, prompt_ids=prompt_ids, max_tokens=max_tokens,
                         ignore_eos=bool(body.get("ignore_eos", False)), stream=bool(body.get("stream", False)),
                         include_usage=bool(options.get("include_usage", False)),
                         model=body.get("model") or model_name)


def _prompt_ids(prompt, tokenizer: ByteTokenizer) -> list[int]:
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]  # a batch of one
    if isinstance(prompt, str):
        return tokenizer.encode(prompt)
    if isinstance(prompt, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
        return list(prompt)
    raise RequestError("'prompt' must be a string or a list of token ids (one prompt per request)")


def usage(prompt_tokens: int, completion_tokens: int, cached_tokens: int) -> dict:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens}}


class ResponseShapes:
    """Builds the JSON objects of one response, streamed or not."""

    def __init__(self, req: ParsedRequest):
        self.req = req
        self.id = ("chatcmpl-" if req.chat else "cmpl-") + uuid.uuid4().hex[:24]
        self.created = int(time.time())
        self.object = "chat.completion" if req.chat else "text_completion"

    def _base(self, chunk: bool) -> dict:
        obj = self.object + (".chunk" if chunk and self.req.chat else "")
        return {"id": self.id, "object": obj, "created": self.created, "model": self.req.model}

    def chunk(self, text: str, finish_reason: str | None, first: bool = False) -> dict:
        if self.req.chat:
            delta = {"role": "assistant", "content": text} if first else {"content": text}
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason}
        return {**self._base(chunk=True), "choices": [choice]}

    def usage_chunk(self, use: dict) -> dict:
        return {**self._base(chunk=True), "choices": [], "usage": use}

    def full(self, text: str, finish_reason: str, use: dict) -> dict:
        if self.req.chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None,
                      "finish_reason": finish_reason}
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason}
        return {**self._base(chunk=False), "choices": [choice], "usage": use}
