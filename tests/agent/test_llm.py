"""OpenAIModel over real HTTP against a scripted OpenAI-compatible server; ScriptedModel; usage/cost."""

import socket

import pytest

from agent.proposers.llm.model import LLMError, OpenAIModel, Pricing, ScriptedModel, ScriptExhausted, Usage
from tests.agent.scripted_openai import ScriptedOpenAIServer, chat_response

SECRET = "sk-test-secret-value-123"


def test_tool_calls_and_usage_over_http():
    with ScriptedOpenAIServer() as srv:
        srv.queue.append(
            (
                200,
                chat_response(
                    tool_calls=[("read_file", {"path": "a.cu", "start_line": 3})],
                    prompt_tokens=321,
                    completion_tokens=12,
                ),
            )
        )
        model = OpenAIModel("my-model", base_url=srv.base_url, api_key=SECRET, max_retries=0)
        reply = model.complete(
            [{"role": "user", "content": "hi"}],
            tools=[
                {
                    "type": "function",
                    "function": {"name": "read_file", "parameters": {"type": "object", "properties": {}}},
                }
            ],
        )
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("read_file", {"path": "a.cu", "start_line": 3})
    ]
    assert (reply.prompt_tokens, reply.completion_tokens) == (321, 12)
    sent = srv.requests[0]
    assert sent["path"] == "/v1/chat/completions" and sent["body"]["model"] == "my-model"
    assert sent["body"]["tools"][0]["function"]["name"] == "read_file"
    assert sent["headers"]["authorization"] == f"Bearer {SECRET}"


def test_rate_limit_is_retried_with_backoff():
    with ScriptedOpenAIServer() as srv:
        srv.queue.append((429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}))
        srv.queue.append((200, chat_response(content="done")))
        model = OpenAIModel("m", base_url=srv.base_url, api_key="k", max_retries=2)
        reply = model.complete([{"role": "user", "content": "hi"}], tools=[])
    assert reply.content == "done" and len(srv.requests) == 2


def test_persistent_errors_are_one_line_and_never_show_the_key():
    with ScriptedOpenAIServer() as srv:
        srv.queue += [(401, {"error": {"message": "bad key"}})]
        model = OpenAIModel("m", base_url=srv.base_url, api_key=SECRET, max_retries=0)
        with pytest.raises(LLMError) as info:
            model.complete([{"role": "user", "content": "x"}], tools=[])
    assert "OPENAI_API_KEY" in str(info.value) and SECRET not in str(info.value)
    assert "\n" not in str(info.value)


def test_unreachable_endpoint_says_what_to_check():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = OpenAIModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0, timeout_s=2)
    with pytest.raises(LLMError, match="cannot reach the LLM endpoint"):
        model.complete([{"role": "user", "content": "x"}], tools=[])


def test_scripted_model_replays_and_runs_out():
    model = ScriptedModel([[("grep", {"pattern": "x"})], "plain text"])
    first = model.complete([{"role": "user", "content": "q"}], [])
    second = model.complete([{"role": "user", "content": "q"}], [])
    assert first.tool_calls[0].name == "grep" and second.content == "plain text"
    with pytest.raises(ScriptExhausted):
        model.complete([], [])


def test_cost_is_unknown_without_pricing_and_computed_with_it():
    model = ScriptedModel(["a"])
    usage = Usage()
    usage.add(model.complete([{"role": "user", "content": "x" * 400}], []))
    assert usage.cost_usd is None and usage.describe_cost().startswith("unknown")
    priced = Usage(prompt_tokens=1_000_000, completion_tokens=500_000, pricing=Pricing(2.0, 8.0))
    assert priced.cost_usd == pytest.approx(6.0)
