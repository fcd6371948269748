"""``bot backup``, ``bot export``, ``bot import`` and ``bot reset``: a channel round-trips
exactly, profiles, 📌 marks, importance and settings included, imported messages are found by
recall, an export from before profiles still imports, and a backup taken while the bot runs is
a consistent database."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from bot.core.commands import run_command
from bot.core.models import CommandCall, Conversation, IncomingMessage, Person, Reply
from bot.core.ports.store import NewSummary
from bot.store.archive import ArchiveError, dump_lines, parse_lines
from bot.store.sqlite.store import SqliteStore
from bot.wiring import App, open_app
from tests.conftest import ConfigFactory
from tests.e2e.test_cli import bot, write_config
from tests.integration.test_profiles import summary_with
from tests.integration.test_recall import last_prompt, recall_block
from tests.support.fake_llm import FakeLLM

TEAM = Conversation("slack", "T1", "C1")
THREAD = Conversation("slack", "T1", "C1", "1700000000.000100")
OTHER = Conversation("slack", "T1", "C2")
ELSEWHERE = Conversation("slack", "T2", "C1")  # another workspace
ANA = Person("slack", "T1", "U1")
SETTINGS = (  # scope, key, value: C1's, its thread's, C2's and C10's (a key like C1's)
    (TEAM.key, "model", "gpt-4o"),
    (TEAM.key, "recall", "off"),
    (TEAM.key, "recall", None),
    (THREAD.key, "model", "llama3"),
    (OTHER.key, "model", "other"),
    ("slack:T1:C10", "model", "other"),
)
TEAM_CHANGES = 4  # of C1 and its thread, whose settings are two more records


async def fill(app: App) -> None:
    """Messages and answers in a channel, its thread and another channel; a pin; a summary;
    settings."""
    for conversation in (TEAM, THREAD, OTHER):
        for n in range(3):
            await app.engine.handle_message(
                IncomingMessage(
                    conversation, "U1", "Ana", f"{conversation.key} says {n} ünïcode ✓",
                    addressed=n != 1, message_id=f"{conversation.key}-{n}",
                )
            )  # fmt: skip
    await app.store.add_pin(
        channel_key=TEAM.channel_key, text="Ana owns billing", tokens=5, author_id="U1",
        author_name="Ana",
    )  # fmt: skip
    first = await app.store.recent_messages(
        conversation_key=TEAM.key, through_id=10**9, after_turn=0, limit=100
    )
    ids = sorted(message.id for message in first)
    saved = await app.store.save_summary(
        NewSummary(TEAM.key, "Ana said things.", 4, ids[1], 2, ids[0], ids[1], 1, False, "m"),
        generation=0,
        previous_id=None,
    )
    assert saved is not None
    for at, (scope, key, value) in enumerate(SETTINGS, 1):
        await app.store.change_setting(
            scope=scope, key=key, value=value, by_id="U1", by_name="Ana", at=float(at)
        )


async def test_a_channel_round_trips_exactly_through_export_and_import(
    app: App, tmp_path: Path
) -> None:
    await fill(app)
    exported = await app.store.export_records(channel_key=TEAM.channel_key)
    kinds = [record["type"] for record in exported]
    assert kinds.count("conversation") == 2  # the channel and its thread, not C2
    assert kinds.count("pin") == 1 and kinds.count("summary") == 1
    assert {r["conversation"] for r in exported if r["type"] == "message"} == {
        TEAM.key,
        THREAD.key,
    }
    assert kinds.count("setting") == 2 and kinds.count("setting_change") == TEAM_CHANGES
    assert {r["scope"] for r in exported if r["type"].startswith("setting")} == {
        TEAM.key,
        THREAD.key,
    }
    text = "".join(dump_lines(exported))
    fresh = await SqliteStore.open(str(tmp_path / "fresh.sqlite3"))
    try:
        imported = await fresh.import_records(parse_lines(text.splitlines()))
        assert imported.records == len(exported) and imported.known_facts == 0
        assert await fresh.export_records(channel_key=TEAM.channel_key) == exported
        assert await fresh.pins(channel_key=TEAM.channel_key) == await app.store.pins(
            channel_key=TEAM.channel_key
        )
        assert await fresh.latest_summary(conversation_key=TEAM.key) == (
            await app.store.latest_summary(conversation_key=TEAM.key)
        )
        scopes = [TEAM.key, THREAD.key, OTHER.key]
        assert await fresh.settings_of(scopes=scopes) == {
            TEAM.key: {"model": "gpt-4o"},
            THREAD.key: {"model": "llama3"},
        }
        for scope in scopes[:2]:
            assert await fresh.setting_changes(scope=scope, limit=9) == (
                await app.store.setting_changes(scope=scope, limit=9)
            )
    finally:
        await fresh.close()


async def test_import_after_a_reset_restores_the_channel_and_refuses_duplicates(
    app: App,
) -> None:
    await fill(app)
    exported = await app.store.export_records(channel_key=TEAM.channel_key)
    advice = (
        "slack:T1:C1 already here; nothing imported. To replace what is here with the file's,"
        " run `bot reset --channel slack:T1:C1 --threads --pins`, then import again"
    )
    with pytest.raises(ArchiveError, match=re.escape(advice)):
        await app.store.import_records(exported)
    assert await app.store.export_records(channel_key=TEAM.channel_key) == exported
    for conversation in (TEAM, THREAD):
        await app.store.reset(conversation=conversation, include_pins=True)
    # The conversations' rows stay (a reset counts in their generation): they take the file's;
    # so do the settings (the reset kept them), skipped.
    imported = await app.store.import_records(exported)
    settings = 2 + TEAM_CHANGES
    assert (imported.records, imported.known_settings) == (len(exported) - settings, settings)
    assert len(await app.store.setting_changes(scope=TEAM.key, limit=9)) == 3
    again = await app.store.export_records(channel_key=TEAM.channel_key)
    assert [r for r in again if r["type"] != "conversation"] == [
        r for r in exported if r["type"] != "conversation"
    ]
    generations = [r["generation"] for r in again if r["type"] == "conversation"]
    assert generations == [2, 2]  # moved on by the reset and by the import


async def test_an_import_whose_ids_another_channel_holds_says_so(
    app: App, make_config: ConfigFactory, tmp_path: Path
) -> None:
    await fill(app)
    exported = await app.store.export_records(channel_key=TEAM.channel_key)
    async with open_app(make_config(storage={"path": str(tmp_path / "b.sqlite3")})) as there:
        await say(there, "a message of its own", where=OTHER)
        with pytest.raises(ArchiveError) as refused:
            await there.store.import_records(exported)
    assert str(refused.value) == (
        "message 1 is another conversation's here (slack:T1:C2); nothing imported (an export"
        " keeps its ids: import it into the database it came from, or into a new one)"
    )


def test_bad_export_lines_are_refused_with_their_line_number() -> None:
    with pytest.raises(ArchiveError, match="line 2: not JSON"):
        parse_lines(["", "{oops"])
    with pytest.raises(ArchiveError, match="line 1: pin lacks id"):
        parse_lines(['{"type": "pin"}'])
    with pytest.raises(ArchiveError, match="no known 'type'"):
        parse_lines(['{"type": "table"}'])
    with pytest.raises(ArchiveError, match="line 1: setting lacks value, by_id, by_name, at"):
        parse_lines(['{"type": "setting", "scope": "slack:T1:C1", "key": "model"}'])
    change = {"type": "setting_change", "id": 1, "scope": "slack:T1:C1", "key": "model",
              "old": None, "new": "m", "by_id": "U1", "by_name": "Ana", "at": 1.5}  # fmt: skip
    assert parse_lines([json.dumps(change)]) == [change]
    for wrong, said in (
        ({"id": "1"}, "setting_change's id is not a whole number"),
        ({"new": 7}, "setting_change's old or new value is neither text nor null"),
        ({"by_name": None}, "setting_change's by_name is not text"),
        ({"at": "noon"}, "setting_change's at is not a time"),
        ({"type": "setting", "value": None}, "setting's value is not text"),
    ):
        with pytest.raises(ArchiveError, match=f"line 1: {said}$"):
            parse_lines([json.dumps({**change, **wrong})])


async def test_a_backup_taken_while_the_bot_runs_is_consistent(app: App, tmp_path: Path) -> None:
    await fill(app)
    target = tmp_path / "backups" / "copy.sqlite3"
    await app.store.backup(target)
    await app.engine.handle_message(IncomingMessage(TEAM, "U1", "Ana", "after", addressed=False))
    db = sqlite3.connect(target)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    copy = await SqliteStore.open(str(target))
    try:
        now = await app.store.export_records(channel_key=None)
        after = [r for r in now if r.get("content") == "after"]
        assert len(after) == 1
        assert await copy.export_records(channel_key=None) == [r for r in now if r not in after]
    finally:
        await copy.close()
    assert not list(target.parent.glob("*.partial"))


def test_backup_export_import_and_reset_from_the_shell(tmp_path: Path, llm_thread: FakeLLM) -> None:
    config = str(write_config(tmp_path, llm_thread.url))
    lines = "hello\n/pin fact\n/remember I like tea\n"
    chat = bot("chat", "--config", config, "--channel", "team", stdin=lines)
    assert chat.returncode == 0, chat.stderr
    dump = tmp_path / "team.jsonl"
    export = bot("export", "--config", config, "--channel", "team", "-o", str(dump))
    assert export.returncode == 0, export.stderr
    records = [json.loads(line) for line in dump.read_text().splitlines()]
    kinds = ["conversation", "message", "message", "pin", "profile_fact"]
    assert [r["type"] for r in records] == kinds
    backup = bot("backup", "--config", config, str(tmp_path / "b.sqlite3"))
    assert backup.returncode == 0, backup.stderr
    reset = bot("reset", "--config", config, "--channel", "team", "--pins")
    assert reset.returncode == 0, reset.stderr
    assert reset.stdout == "reset console:local:team: 2 messages deleted and its channel's pins\n"
    restored = bot("import", "--config", config, stdin=dump.read_text())
    assert restored.returncode == 0, restored.stderr
    # /reset left the profile: its fact is already kept.
    assert "imported 4 records; 1 profile fact already kept, skipped" in restored.stderr
    twice = bot("import", "--config", config, str(dump))
    assert twice.returncode == 1 and "console:local:team already here" in twice.stderr
    again = bot("export", "--config", config, "--channel", "console:local:team")
    assert again.stdout.splitlines()[1:] == dump.read_text().splitlines()[1:]
    helped = bot("export", "--help")
    assert "with the profiles of the people who wrote in it" in " ".join(helped.stdout.split())


async def command(
    app: App, name: str, argument: str = "", who: str = "Ana", where: Conversation = TEAM
) -> Reply:
    user_id = {"Ana": "U1", "Bo": "U2"}[who]
    return await run_command(app.engine, CommandCall(where, name, argument, user_id, who))


async def say(
    app: App, text: str, who: str = "Ana", where: Conversation = TEAM, message_id: str | None = None
) -> None:
    """A message to the channel; answered when it starts with @bot."""
    user_id = {"Ana": "U1", "Bo": "U2"}[who]
    addressed = text.startswith("@bot")
    await app.engine.handle_message(
        IncomingMessage(where, user_id, who, text, addressed=addressed, message_id=message_id)
    )


async def test_a_whole_bot_moves_with_its_profiles_forgets_marks_and_importance(
    app: App, make_config: ConfigFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    await fill(app)
    await say(app, "The budget is 4200 EUR", who="Bo", message_id="budget")
    await say(app, "nice weather", who="Bo", message_id="weather")
    assert await app.engine.mark_important(TEAM, "weather", True)
    await command(app, "remember", "I work from Berlin")
    await command(app, "remember", "call me Annie")
    await command(app, "forget", "2")
    await command(app, "remember", "vegetarian", who="Bo", where=ELSEWHERE)
    profiles = [
        (await command(app, "profile")).text,
        (await command(app, "profile", who="Bo", where=ELSEWHERE)).text,
    ]
    exported = await app.store.export_records(channel_key=None)
    assert [r["text"] for r in exported if r["type"] == "profile_fact"] == [
        "I work from Berlin",
        "vegetarian",
    ]
    assert [r["user_id"] for r in exported if r["type"] == "profile_forget"] == ["U1"]
    moved = make_config(storage={"path": str(tmp_path / "moved.sqlite3")})
    async with open_app(moved) as there:
        text = "".join(dump_lines(exported))
        imported = await there.store.import_records(parse_lines(text.splitlines()))
        assert imported.records == len(exported)
        assert await there.store.export_records(channel_key=None) == exported
        assert [
            (await command(there, "profile")).text,
            (await command(there, "profile", who="Bo", where=ELSEWHERE)).text,
        ] == profiles
        assert await there.store.profile_forgot_at(person=ANA) == (
            await app.store.profile_forgot_at(person=ANA)
        )
        budget = await there.store.find_message(conversation_key=TEAM.key, message_id="budget")
        weather = await there.store.find_message(conversation_key=TEAM.key, message_id="weather")
        assert budget is not None and budget.important  # scored
        assert weather is not None and weather.important  # 📌 marked by hand
        # The mark is the same count: removing the one 📌 there unmarks it.
        assert await there.engine.mark_important(TEAM, "weather", False)
        weather = await there.store.find_message(conversation_key=TEAM.key, message_id="weather")
        assert weather is not None and not weather.important
        await say(there, "@bot where do I work?")
    assert "- I work from Berlin" in last_prompt(llm)[0]["content"]


async def test_facts_someone_deleted_are_not_inferred_again_from_their_imported_messages(
    make_config: ConfigFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    llm.responder = summary_with(
        "Facts:\n- chat\nNarrative:\nchat.\nProfiles:\nPROFILE Ana: lives in Lyon\n"
    )
    memory = {"strategy": "summary", "summary_rebuild_every": 1}
    async with open_app(make_config(memory=memory)) as app:
        await say(app, "I live in Lyon")
        for i in range(3):
            await say(app, f"chat {i}", who="Bo")
        await command(app, "summarize")
        assert [f.text for f in await app.store.profile_facts(person=ANA)] == ["lives in Lyon"]
        await command(app, "forget", "all")
        exported = await app.store.export_records(channel_key=TEAM.channel_key)
    moved = make_config(memory=memory, storage={"path": str(tmp_path / "moved.sqlite3")})
    async with open_app(moved) as there:
        await there.store.import_records(exported)
        # Every compaction rebuilds from the raw messages, Ana's old one included: the model
        # proposes the fact again, from a message older than her /forget; not stored.
        for i in range(2):
            await say(there, f"more chat {i}", who="Bo")
        await command(there, "summarize")
        assert await there.store.profile_facts(person=ANA) == []


async def test_an_import_does_not_bring_back_what_someone_deleted_with_forget(
    app: App, tmp_path: Path
) -> None:
    await say(app, "hi")
    await command(app, "remember", "I am vegetarian")
    await command(app, "remember", "I work from Berlin")
    await command(app, "remember", "likes tea", who="Bo")
    exported = await app.store.export_records(channel_key=TEAM.channel_key)
    await command(app, "forget", "1")  # Ana deletes one fact after the export was taken
    await command(app, "remember", "I moved to Lyon")  # and keeps a newer one
    await app.store.reset(conversation=TEAM, include_pins=True)
    rows = [r for r in exported if r["type"] != "conversation"]  # its row stays after a reset
    imported = await app.store.import_records(rows)  # the channel comes back from the file
    assert (imported.known_facts, imported.forgotten_facts) == (1, 1)
    ana = [fact.text for fact in await app.store.profile_facts(person=ANA)]
    assert ana == ["I work from Berlin", "I moved to Lyon"]  # still there, and the newer one
    bo = await app.store.profile_facts(person=Person("slack", "T1", "U2"))
    assert [fact.text for fact in bo] == ["likes tea"]  # Bo never used /forget: untouched


async def test_a_channel_carries_the_profiles_of_who_wrote_in_it_within_its_workspace(
    app: App,
) -> None:
    await say(app, "hello from the thread", where=THREAD)  # Ana writes only in a thread of C1
    await say(app, "hello from C2", who="Bo", where=OTHER)  # Bo never writes in C1
    await command(app, "remember", "I work from Berlin", where=OTHER)  # same workspace
    await command(app, "remember", "temporary", where=OTHER)
    await command(app, "forget", "2", where=OTHER)
    await command(app, "remember", "night shift there", where=ELSEWHERE)
    await command(app, "forget", "all", where=ELSEWHERE)
    await command(app, "remember", "likes tea", who="Bo", where=OTHER)
    exported = await app.store.export_records(channel_key=TEAM.channel_key)
    facts = [r for r in exported if r["type"] == "profile_fact"]
    assert [(r["workspace"], r["user_id"], r["text"]) for r in facts] == [
        ("T1", "U1", "I work from Berlin")
    ]
    forgets = [r for r in exported if r["type"] == "profile_forget"]
    assert [(r["workspace"], r["user_id"]) for r in forgets] == [("T1", "U1")]


async def test_importing_a_channel_into_a_bot_that_knows_the_person_merges_their_profile(
    app: App, make_config: ConfigFactory, tmp_path: Path
) -> None:
    await say(app, "hi")
    await command(app, "remember", "I work from Berlin")
    await command(app, "remember", "vegetarian")
    exported = await app.store.export_records(channel_key=TEAM.channel_key)
    async with open_app(make_config(storage={"path": str(tmp_path / "b.sqlite3")})) as there:
        await command(there, "remember", "likes tea", who="Bo", where=OTHER)  # takes #1
        await command(there, "remember", "i work from berlin", where=OTHER)  # #2, same text
        imported = await there.store.import_records(exported)
        assert (imported.records, imported.known_facts) == (len(exported) - 1, 1)
        listed = (await command(there, "profile")).text
        assert "#2 (you set it): i work from berlin" in listed
        assert "#3 (you set it): vegetarian" in listed  # its #2 was taken
        assert listed.startswith("2 facts kept")
        # All or nothing still: a new fact goes only with the rest of the import.
        new_fact = {**next(r for r in exported if r["type"] == "profile_fact"), "text": "new"}
        with pytest.raises(ArchiveError, match="slack:T1:C1 already here; nothing imported"):
            await there.store.import_records([new_fact, *exported])
        assert (await command(there, "profile")).text == listed


async def test_recall_finds_an_early_fact_in_a_channel_moved_from_the_shell(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    memory = {"strategy": "full", "max_context_tokens": 600, "recall_tokens": 250}
    config = str(write_config(tmp_path, llm_thread.url, memory=memory))
    lines = ["/remember I work from Berlin", "the guest wifi password is tangerine-42"]
    lines += [f"chatter {i}: lunch plans, the weather and the coffee machine" for i in range(30)]
    chat = bot(
        "chat",
        "--config",
        config,
        "--channel",
        "team",
        "--user",
        "Ana",
        stdin="\n".join(lines) + "\n",
    )
    assert chat.returncode == 0, chat.stderr
    dump = tmp_path / "team.jsonl"
    export = bot("export", "--config", config, "--channel", "team", "-o", str(dump))
    assert export.returncode == 0, export.stderr
    (tmp_path / "moved").mkdir()
    moved = str(write_config(tmp_path / "moved", llm_thread.url, memory=memory))
    imported = bot("import", "--config", moved, str(dump))
    assert imported.returncode == 0, imported.stderr
    question = "what is the guest wifi password?\n"
    asked = bot("chat", "--config", moved, "--channel", "team", "--user", "Ana", stdin=question)
    assert asked.returncode == 0, asked.stderr
    prompt = last_prompt(llm_thread)
    assert "tangerine-42" not in "\n".join(m["content"] for m in prompt[2:])
    assert "[Ana] the guest wifi password is tangerine-42" in recall_block(prompt)
    assert "- I work from Berlin" in prompt[0]["content"]


async def test_an_export_from_before_importance_imports_with_scored_messages(
    tmp_path: Path,
) -> None:
    """Lines as an older version wrote them: no importance, marks or profiles."""
    key = "console:local:team"
    lines = [
        {"type": "conversation", "key": key, "channel_key": key, "generation": 0,
         "created_at": 1.0},
        *(
            {
                "type": "message", "id": n, "conversation": key, "reply_to": reply_to,
                "role": role, "author_id": author, "author_name": author, "content": content,
                "tokens": 9, "platform_message_id": None, "created_at": 1.0 + n,
            }
            for n, reply_to, role, author, content in (
                (1, None, "user", "ana", "The budget is 4200 EUR"),
                (2, 1, "assistant", "bot", "Noted: 4200 EUR"),
                (3, None, "user", "ana", "nice weather"),
            )
        ),
    ]  # fmt: skip
    store = await SqliteStore.open(str(tmp_path / "fresh.sqlite3"))
    try:
        records = parse_lines(json.dumps(line) for line in lines)
        assert (await store.import_records(records)).records == 4
        kept = await store.messages_between(conversation_key=key, first_id=1, through_id=3)
        # As the bot scores what it stores: people's messages only.
        assert [m.important for m in kept] == [True, False, False]
        rows = [r for r in await store.export_records(channel_key=key) if r["type"] == "message"]
        assert [(r["importance"] > 0, r["marks"]) for r in rows] == [
            (True, 0),
            (False, 0),
            (False, 0),
        ]
    finally:
        await store.close()


async def test_bad_profile_records_are_refused_with_the_reason_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    fact = {
        "type": "profile_fact", "id": 1, "platform": "slack", "workspace": "T1",
        "user_id": "U1", "text": "I work from Berlin", "tokens": 4, "source": "rumour",
        "created_at": 1.0,
    }  # fmt: skip
    with pytest.raises(ArchiveError, match="line 1: profile_fact lacks text"):
        parse_lines([json.dumps({k: v for k, v in fact.items() if k != "text"})])
    with pytest.raises(ArchiveError, match="line 1: profile_fact's text is not text"):
        parse_lines([json.dumps({**fact, "text": 7})])
    store = await SqliteStore.open(str(tmp_path / "fresh.sqlite3"))
    try:
        good = {**fact, "id": 2, "text": "I drink tea", "source": "user"}
        with pytest.raises(ArchiveError, match="profile_fact 1: CHECK constraint failed"):
            await store.import_records(parse_lines([json.dumps(good), json.dumps(fact)]))
        assert await store.profile_facts(person=ANA) == []
    finally:
        await store.close()


async def test_the_shell_restores_a_channel_with_its_threads_as_the_refusal_says(
    app: App, tmp_path: Path
) -> None:
    await fill(app)
    config = str(write_config(tmp_path, "http://127.0.0.1:9/v1"))
    dump = tmp_path / "c1.jsonl"
    assert (
        bot("export", "--config", config, "--channel", "slack:T1:C1", "-o", str(dump)).returncode
        == 0
    )
    refused = bot("import", "--config", config, str(dump))
    assert refused.returncode == 1
    advice = refused.stderr.split("`")[1]
    assert advice == "bot reset --channel slack:T1:C1 --threads --pins"
    reset = bot(*advice.split()[1:], "--config", config)
    assert reset.stdout == (
        "reset slack:T1:C1 and 1 of its threads: 10 messages deleted and its channel's pins\n"
    )
    assert "slack:T1:C2" in bot("stats", "--config", config).stdout  # another channel: kept
    restored = bot("import", "--config", config, str(dump))
    assert restored.returncode == 0
    assert restored.stderr.endswith("; 6 setting records already here, skipped\n")
    again = bot("export", "--config", config, "--channel", "slack:T1:C1")
    assert [line for line in again.stdout.splitlines() if '"type": "conversation"' not in line] == [
        line for line in dump.read_text().splitlines() if '"type": "conversation"' not in line
    ]


async def test_a_backup_another_process_writes_during_is_finished_in_one_step(
    app: App, tmp_path: Path
) -> None:
    await fill(app)
    for n in range(300):  # some hundreds of pages: a copy of several steps
        await say(app, f"filler {n} " + "many words " * 400)
    other = sqlite3.connect(tmp_path / "bot.sqlite3", check_same_thread=False)
    seen: list[tuple[int, int]] = []

    def pages(done: int, total: int) -> None:
        if not seen:  # between the first two steps, another process writes
            other.execute("INSERT INTO meta (key, value) VALUES ('written', 'meanwhile')")
            other.commit()
        seen.append((done, total))

    target = tmp_path / "copy.sqlite3"
    await app.store.backup(target, pages)
    other.close()
    assert len(seen) == 1 and seen[0][0] < seen[0][1]  # then the rest in one step
    copy = sqlite3.connect(target)
    assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert copy.execute("SELECT value FROM meta WHERE key = 'written'").fetchone() == ("meanwhile",)
    stored = await app.store.export_records(channel_key=None)
    assert copy.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == sum(
        record["type"] == "message" for record in stored
    )
    copy.close()
