"""Streamed replies through the real ``openai`` SDK against the local test server: the text
comes in order and the usage at the end; a stream cut, broken or stalled part way fails as an
:class:`LLMError`, within the deadline; the observed wrapper reports streams as requests."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from bot.core.ports.llm import Failure, LLMError, StreamEnd
from bot.llm.observed import ObservedChatModel
from bot.llm.openai import OpenAIChatModel, RetryPolicy, make_client
from bot.telemetry.metrics import PrometheusObserver
from tests.support.fake_llm import Break, FakeLLM, Reply, count_prompt_tokens, encoding_for

MODEL = "gpt-4o-mini"
MESSAGES = [
    {"role": "system", "content": "You are a test assistant."},
    {"role": "user", "content": "[Ana] count to five"},
]
TEXT = "one two three four five"
FAST_RETRY = {"retry-after-ms": "10"}


@pytest.fixture
async def model(llm: FakeLLM) -> AsyncIterator[OpenAIChatModel]:
    client = make_client(base_url=llm.url, api_key="test-key", timeout=5, max_retries=2)
    async with client:
        yield OpenAIChatModel(client, MODEL, policy=RetryPolicy(retries=2, timeout=5, deadline=10))


async def read(stream: AsyncIterator[str | StreamEnd], into: list[str]) -> StreamEnd:
    """The stream's text pieces appended to ``into`` as they come; its end returned."""
    end: StreamEnd | None = None
    async for item in stream:
        assert end is None, "nothing comes after the end"
        if isinstance(item, StreamEnd):
            end = item
        else:
            into.append(item)
    assert end is not None
    return end


async def test_the_text_comes_in_pieces_in_order_and_the_usage_at_the_end(
    llm: FakeLLM, model: OpenAIChatModel
) -> None:
    llm.script(TEXT)
    pieces: list[str] = []
    end = await read(model.stream(MESSAGES, max_tokens=100), pieces)
    assert pieces == ["one", " two", " three", " four", " five"]
    assert end.model == MODEL and end.finish_reason == "stop"
    assert end.prompt_tokens == count_prompt_tokens(MODEL, MESSAGES)
    assert end.completion_tokens == len(encoding_for(MODEL).encode_ordinary(TEXT))
    assert 0 < end.seconds < 5
    assert end.cached_tokens == 0  # the server said nothing of a prompt cache
    (body,) = llm.chat_requests
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"] == MESSAGES and body["max_tokens"] == 100


async def test_the_cached_prompt_tokens_are_read_from_whole_and_streamed_answers(
    llm: FakeLLM, model: OpenAIChatModel
) -> None:
    llm.script(
        Reply(TEXT, prompt_tokens=1200, cached_tokens=1024, completion_tokens=7),
        Reply(TEXT, prompt_tokens=900, cached_tokens=512, completion_tokens=5),
    )
    whole = await model.complete(MESSAGES, max_tokens=100)
    assert (whole.prompt_tokens, whole.cached_tokens, whole.completion_tokens) == (1200, 1024, 7)
    end = await read(model.stream(MESSAGES, max_tokens=100), [])
    assert (end.prompt_tokens, end.cached_tokens, end.completion_tokens) == (900, 512, 5)


async def test_a_whole_completion_sends_the_messages_as_given(
    llm: FakeLLM, model: OpenAIChatModel
) -> None:
    completion = await model.complete(MESSAGES, max_tokens=50)
    assert completion.text == "echo: [Ana] count to five"
    (body,) = llm.chat_requests
    assert body["messages"] == MESSAGES and "stream" not in body


@pytest.mark.parametrize("stream", [False, True])
async def test_the_request_is_the_one_the_sdks_typed_parameter_makes(
    llm: FakeLLM, model: OpenAIChatModel, stream: bool
) -> None:
    """The client puts the messages in the body as they are, past the SDK's transform of its
    typed parameter (a CPU cost that grows with the prompt, ``bench/sdk_transform.py``): what
    the server receives is what the typed parameter sends."""
    messages = [
        *MESSAGES,
        {"role": "assistant", "content": "earlier answer \u200b with <|endoftext|>"},
        {"role": "user", "content": '[Zoë] 密码是什么？ 🎉 "quoted" \\ back'},
    ]
    if stream:
        await read(model.stream(messages, max_tokens=40), [])
    else:
        await model.complete(messages, max_tokens=40)
    client = make_client(base_url=llm.url, api_key="test-key", timeout=5, max_retries=0)
    async with client:
        if stream:
            chunks = await client.chat.completions.create(
                model=MODEL,
                messages=messages,  # type: ignore[arg-type]
                max_tokens=40,
                stream=True,
                stream_options={"include_usage": True},
            )
            async for _ in chunks:
                pass
        else:
            await client.chat.completions.create(
                model=MODEL,
                messages=messages,  # type: ignore[arg-type]
                max_tokens=40,
            )
    ours, typed = llm.chat_records
    assert ours.body == typed.body


@pytest.mark.parametrize(
    ("breaks", "failure"),
    [
        (Break(after=2, how="drop"), Failure.UNAVAILABLE),
        (Break(after=2, how="error"), Failure.BAD_RESPONSE),
    ],
)
async def test_a_stream_broken_part_way_fails_after_the_pieces_sent_and_is_not_retried(
    llm: FakeLLM, model: OpenAIChatModel, breaks: Break, failure: Failure
) -> None:
    llm.script(Reply(text=TEXT, breaks=breaks))
    pieces: list[str] = []
    with pytest.raises(LLMError) as raised:
        await read(model.stream(MESSAGES, max_tokens=100), pieces)
    assert raised.value.failure is failure
    assert pieces == ["one", " two"]
    assert len(llm.chat_requests) == 1


async def test_a_stream_that_stalls_fails_at_the_deadline(
    llm: FakeLLM, model: OpenAIChatModel
) -> None:
    llm.script(Reply(text=TEXT, breaks=Break(after=3, how="stall")))
    pieces: list[str] = []
    started = time.monotonic()
    with pytest.raises(LLMError) as raised:
        await read(model.stream(MESSAGES, max_tokens=100, deadline=started + 0.5), pieces)
    took = time.monotonic() - started
    assert raised.value.failure is Failure.TIMEOUT
    assert "did not answer in time" in raised.value.user_message
    assert pieces == ["one", " two", " three"]
    assert 0.5 <= took < 2


async def test_a_slow_but_steady_stream_is_read_to_the_end(
    llm: FakeLLM, model: OpenAIChatModel
) -> None:
    llm.script(Reply(text=TEXT, piece_delay=0.05))
    pieces: list[str] = []
    await read(model.stream(MESSAGES, max_tokens=100, deadline=time.monotonic() + 5), pieces)
    assert "".join(pieces) == TEXT


async def test_opening_a_stream_is_retried_like_a_completion(
    llm: FakeLLM, model: OpenAIChatModel
) -> None:
    failed = Reply(status=500, headers=FAST_RETRY, error=Reply.server_error().error)
    llm.script(failed, Reply.rate_limited(retry_after=0.01), TEXT)
    pieces: list[str] = []
    await read(model.stream(MESSAGES, max_tokens=100), pieces)
    assert "".join(pieces) == TEXT
    assert len(llm.chat_requests) == 3


@pytest.mark.parametrize(
    ("reply", "failure"),
    [
        (Reply.context_length(), Failure.CONTEXT_LENGTH),
        (Reply(status=401), Failure.AUTH),
        (Reply(text=""), Failure.EMPTY),
        (Reply(raw_body="data: {not json\n\n"), Failure.BAD_RESPONSE),
    ],
)
async def test_a_stream_fails_as_a_completion_does(
    llm: FakeLLM, model: OpenAIChatModel, reply: Reply, failure: Failure
) -> None:
    llm.script(reply)
    with pytest.raises(LLMError) as raised:
        await read(model.stream(MESSAGES, max_tokens=100), [])
    assert raised.value.failure is failure
    assert len(llm.chat_requests) == 1


async def test_a_passed_deadline_fails_before_any_request(
    llm: FakeLLM, model: OpenAIChatModel
) -> None:
    with pytest.raises(LLMError) as raised:
        await read(model.stream(MESSAGES, max_tokens=100, deadline=time.monotonic()), [])
    assert raised.value.failure is Failure.TIMEOUT
    assert llm.chat_requests == []


async def test_a_refusal_is_said_as_the_reply(llm: FakeLLM, model: OpenAIChatModel) -> None:
    llm.script(Reply(text=None, refusal="I can't help with that."))
    pieces: list[str] = []
    await read(model.stream(MESSAGES, max_tokens=100), pieces)
    assert pieces == ["(The model declined to answer: I can't help with that.)"]


async def test_the_observed_model_reports_a_stream_with_its_tokens_and_a_failure(
    llm: FakeLLM, model: OpenAIChatModel
) -> None:
    metrics = PrometheusObserver()
    observed = ObservedChatModel(model, metrics, purpose="chat")
    llm.script(TEXT, Reply(text=TEXT, breaks=Break(after=1, how="drop")))
    end = await read(observed.stream(MESSAGES, max_tokens=100), [])
    with pytest.raises(LLMError):
        await read(observed.stream(MESSAGES, max_tokens=100), [])

    def sample(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(name, labels)

    assert sample("bot_llm_request_seconds_count", model=MODEL, purpose="chat") == 2
    assert sample("bot_llm_prompt_tokens_total", model=MODEL) == end.prompt_tokens
    assert sample("bot_llm_completion_tokens_total", model=MODEL) == end.completion_tokens
    assert sample("bot_errors_total", kind="llm_unavailable") == 1


async def test_a_reader_that_stops_early_closes_the_stream_and_it_is_still_reported(
    llm: FakeLLM, model: OpenAIChatModel
) -> None:
    metrics = PrometheusObserver()
    observed = ObservedChatModel(model, metrics, purpose="chat")
    llm.script(Reply(text=TEXT, piece_delay=0.01))
    stream = observed.stream(MESSAGES, max_tokens=100)
    assert await anext(stream) == "one"
    await stream.aclose()
    count = metrics.registry.get_sample_value(
        "bot_llm_request_seconds_count", {"model": MODEL, "purpose": "chat"}
    )
    assert count == 1
    assert metrics.registry.get_sample_value("bot_llm_prompt_tokens_total", {"model": MODEL}) in (
        None,
        0,
    )
