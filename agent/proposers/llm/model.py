"""The LLM boundary: the `Model` protocol, `OpenAIModel` for any OpenAI-compatible endpoint, and
`ScriptedModel`, which tests pass exactly where a real model goes."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Protocol


class LLMError(Exception):
    """The endpoint could not be used; the message says what to do."""


class ScriptExhausted(LLMError):
    """A ScriptedModel was asked for more replies than it was given."""


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    """Parsed JSON arguments; {"_raw": text} when the model sent invalid JSON."""


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def as_message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                }
                for c in self.tool_calls
            ]
        return msg


class Model(Protocol):
    """One chat turn: messages and tool schemas in, a reply (text and/or tool calls) out."""

    name: str

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply: ...


@dataclass
class Pricing:
    """USD per million tokens; both None means cost is unknown (never guessed)."""

    input_per_mtok: float | None = None
    output_per_mtok: float | None = None


@dataclass
class Usage:
    """Token counts and cost over a run; cost stays None unless pricing is configured."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    pricing: Pricing = field(default_factory=Pricing)

    def add(self, reply: Reply) -> None:
        self.calls += 1
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def cost_usd(self) -> float | None:
        p = self.pricing
        if p.input_per_mtok is None or p.output_per_mtok is None:
            return None
        return (self.prompt_tokens * p.input_per_mtok + self.completion_tokens * p.output_per_mtok) / 1e6

    def describe_cost(self) -> str:
        cost = self.cost_usd
        return "unknown (no pricing configured)" if cost is None else f"${cost:.4f}"


def _parse_arguments(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {"_raw": text or ""}
    return value if isinstance(value, dict) else {"_raw": text or ""}


class OpenAIModel:
    """Any OpenAI-compatible chat endpoint through the `openai` client.

    Retries with exponential backoff on 429, 5xx, timeouts and dropped connections are the
    client's own (honouring Retry-After); `max_retries` caps them.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        temperature: float = 0.0,
    ):
        import openai

        self.name = model
        self.temperature = temperature
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=self.base_url, api_key=key, timeout=timeout_s, max_retries=max_retries
        )

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        openai = self._openai
        kwargs: dict[str, Any] = {"model": self.name, "messages": messages, "temperature": self.temperature}
        if tools:
            kwargs["tools"] = tools
        try:
            resp = self._client.chat.completions.create(**kwargs)
        except openai.AuthenticationError as exc:
            raise LLMError(
                f"the LLM endpoint {self.base_url} rejected the API key (HTTP 401): "
                f"set OPENAI_API_KEY to a valid key"
            ) from exc
        except openai.NotFoundError as exc:
            raise LLMError(
                f"the LLM endpoint {self.base_url} does not know model {self.name!r} (HTTP 404): "
                f"check llm.model"
            ) from exc
        except openai.RateLimitError as exc:
            raise LLMError(
                f"the LLM endpoint {self.base_url} kept rate-limiting after retries (HTTP 429): "
                f"lower concurrency or raise the provider limit"
            ) from exc
        except openai.APIConnectionError as exc:
            raise LLMError(
                f"cannot reach the LLM endpoint {self.base_url}: check llm.base_url (or "
                f"OPENAI_BASE_URL) and that the server is up"
            ) from exc
        except openai.APIStatusError as exc:
            raise LLMError(
                f"the LLM endpoint {self.base_url} answered HTTP {exc.status_code}: {str(exc.message)[:200]}"
            ) from exc
        if not resp.choices:
            raise LLMError(f"the LLM endpoint {self.base_url} returned no choices")
        msg = resp.choices[0].message
        calls = [
            ToolCall(id=c.id, name=c.function.name, arguments=_parse_arguments(c.function.arguments))
            for c in (msg.tool_calls or [])
        ]
        usage = resp.usage
        return Reply(
            content=msg.content,
            tool_calls=calls,
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
        )


class ScriptedModel:
    """Returns the given replies in order and raises ScriptExhausted when it runs out.

    Each scripted item is a Reply, a string (plain text), or a list of (tool_name, arguments)
    tuples (tool calls). `seen` keeps every message list it was called with.
    """

    def __init__(self, script: list[Any], name: str = "scripted"):
        self.name = name
        self._script = list(script)
        self.seen: list[list[dict[str, Any]]] = []

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        self.seen.append([dict(m) for m in messages])
        if not self._script:
            raise ScriptExhausted(f"scripted model {self.name!r} has no reply left for turn {len(self.seen)}")
        item = self._script.pop(0)
        if isinstance(item, Reply):
            return item
        if isinstance(item, str):
            return Reply(
                content=item, prompt_tokens=_rough_tokens(messages), completion_tokens=_rough_tokens(item)
            )
        calls = [
            ToolCall(id=f"call_{len(self.seen)}_{i}", name=n, arguments=a) for i, (n, a) in enumerate(item)
        ]
        return Reply(
            tool_calls=calls, prompt_tokens=_rough_tokens(messages), completion_tokens=20 * len(calls)
        )


def _rough_tokens(value: Any) -> int:
    """A token count for scripted replies (about four characters a token), so budgets are exercised."""
    return max(1, len(json.dumps(value)) // 4)


@dataclass
class EndpointConfig:
    """Where the LLM is; the key is read from the environment variable named here, never stored."""

    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    pricing: Pricing = field(default_factory=Pricing)


def model_from_config(cfg: EndpointConfig | None) -> OpenAIModel | None:
    """An OpenAIModel when an endpoint is configured (config or OPENAI_BASE_URL), else None."""
    if cfg is None:
        return None
    base_url = cfg.base_url or os.environ.get("OPENAI_BASE_URL")
    if not base_url and not os.environ.get(cfg.api_key_env):
        return None
    return OpenAIModel(cfg.model, base_url=base_url, api_key=os.environ.get(cfg.api_key_env))
