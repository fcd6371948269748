from bot.core.models import Conversation, IncomingMessage
from bot.wiring import App
from tests.support.fake_llm import FakeLLM


async def test_a_message_gets_an_answer_and_is_remembered(app: App, llm: FakeLLM) -> None:
    general = Conversation.console("general")
    first = await app.engine.handle_message(
        IncomingMessage(general, "u1", "Ana", "my name is Ana", addressed=True)
    )
    assert first is not None and first.text == "echo: [Ana] my name is Ana"
    await app.engine.handle_message(
        IncomingMessage(general, "u1", "Ana", "what is my name?", addressed=True)
    )
    sent = llm.chat_requests[-1]["messages"]
    assert [m["content"] for m in sent[1:]] == [
        "[Ana] my name is Ana",
        "echo: [Ana] my name is Ana",
        "[Ana] what is my name?",
    ]
