"""Export, import and backup for the in-memory store, in ``bot.store.archive``'s records
(the same JSON Lines ``bot export`` writes), with the same rules: ids kept, all or nothing,
profile facts merged, settings already here skipped."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bot.core.memory.importance import score
from bot.core.models import Conversation, FactSource, Person, Pin, ProfileFact, Role, Summary
from bot.core.ports.settings import SettingChange
from bot.store import archive_settings
from bot.store.archive import ArchiveError, Imported, dump_lines
from bot.store.archive_settings import CHANGE_COLUMNS, in_channel
from bot.store.memory.tables import ConversationRow, MessageRow, SettingRow, Tables


def _message(row: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": row.id,
        "conversation": row.conversation,
        "reply_to": row.reply_to,
        "role": row.role.value,
        "author_id": row.author_id,
        "author_name": row.author_name,
        "content": row.content,
        "tokens": row.tokens,
        "platform_message_id": row.message_id,
        "created_at": row.created_at,
        "importance": row.importance,
        "marks": row.marks,
    }


def _summary(summary: Summary) -> dict[str, Any]:
    fields = dataclasses.asdict(summary)
    fields["conversation"] = fields.pop("conversation_key")
    return {"type": "summary", **fields, "rebuilt": int(summary.rebuilt)}


def _person(person: Person) -> dict[str, str]:
    return {"platform": person.platform, "workspace": person.workspace, "user_id": person.user_id}


def export_records(store: Tables, *, channel_key: str | None) -> list[dict[str, Any]]:
    """One channel's conversations, messages, pins and summaries, its people's profiles and
    its and its threads' settings (everything, when None)."""
    keys = {
        key
        for key, row in store.conversation_rows.items()
        if channel_key is None or row.channel_key == channel_key
    }
    messages = sorted((r for r in store.messages.values() if r.conversation in keys), key=_id)
    people: set[Person] | None = None
    if channel_key is not None:
        channel = Conversation.from_key(channel_key)
        people = {
            Person(channel.platform, channel.workspace, row.author_id)
            for row in messages
            if row.role is Role.USER
        }
    records: list[dict[str, Any]] = [
        {"type": "conversation", **dataclasses.asdict(store.conversation_rows[key])}
        for key in sorted(keys)
    ]
    records += [_message(row) for row in messages]
    records += [
        {"type": "pin", **dataclasses.asdict(pin)}
        for pin in sorted(store.pin_rows.values(), key=_id)
        if channel_key is None or pin.channel_key == channel_key
    ]
    records += [
        _summary(summary)
        for summary in sorted(store.summaries.values(), key=_id)
        if summary.conversation_key in keys
    ]
    records += [
        {
            "type": "profile_fact",
            "id": fact.id,
            **_person(fact.person),
            "text": fact.text,
            "tokens": fact.tokens,
            "source": fact.source.value,
            "created_at": fact.created_at,
        }
        for fact in sorted(store.facts.values(), key=_id)
        if people is None or fact.person in people
    ]
    records += [
        {"type": "profile_forget", **_person(person), "forgot_at": at}
        for person, at in store.forgets.items()
        if people is None or person in people
    ]
    return records + _settings(store, channel_key)


def _settings(store: Tables, channel_key: str | None) -> list[dict[str, Any]]:
    def wanted(scope: str) -> bool:
        return channel_key is None or in_channel(scope, channel_key)

    records = [
        {"type": "setting", "scope": scope, "key": key, **dataclasses.asdict(row)}
        for scope in sorted(store.setting_rows)
        if wanted(scope)
        for key, row in sorted(store.setting_rows[scope].items())
    ]
    return records + [
        {"type": "setting_change", "id": ident, **dataclasses.asdict(change)}
        for ident, change in sorted(store.setting_log.items())
        if wanted(change.scope)
    ]


def _id(row: Any) -> int:
    return int(row.id)


def write_backup(store: Tables, target: Path) -> None:
    """Every record as JSON Lines at ``target``, written beside it and renamed once whole."""
    partial = target.with_name(target.name + ".partial")
    with partial.open("w", encoding="utf-8") as out:
        out.writelines(dump_lines(export_records(store, channel_key=None)))
    partial.replace(target)


def _clash(store: Tables, records: Iterable[dict[str, Any]]) -> str | None:
    """Why the records cannot go in: one of them is already here."""
    held = {
        key
        for key in store.conversation_rows
        if any(r.conversation == key for r in store.messages.values())
        or any(s.conversation_key == key for s in store.summaries.values())
    }
    tables: dict[str, dict[int, Any]] = {
        "message": store.messages,
        "pin": store.pin_rows,
        "summary": store.summaries,
    }
    for record in records:
        kind = record["type"]
        if (kind == "conversation" and record["key"] in held) or (
            kind in tables and record["id"] in tables[kind]
        ):
            ident = record.get("id", record.get("key"))
            return f"{kind} {ident} is already here; nothing imported"
    return None


def import_records(store: Tables, records: list[dict[str, Any]]) -> Imported:
    """Write ``records`` (all, or none when one is already here), profile facts merged."""
    held = {s: {k: row.value for k, row in v.items()} for s, v in store.setting_rows.items()}
    changes = {ident: dataclasses.astuple(change) for ident, change in store.setting_log.items()}
    settings = archive_settings.compare(records, held, changes)
    refusal = settings.refusal or _clash(store, records)
    if refusal is not None:
        raise ArchiveError(refusal)
    forgot = dict(store.forgets)  # as before the import: the archive's own are the source's
    written = known = forgotten = 0
    for number, record in enumerate(records):
        kind = record["type"]
        if number in settings.skipped:
            continue
        if kind == "profile_fact":
            outcome = _import_fact(store, record, forgot)
            known += outcome == "known"
            forgotten += outcome == "forgotten"
            if outcome != "written":
                continue
        elif kind == "profile_forget":
            person = Person(record["platform"], record["workspace"], record["user_id"])
            store.forgets[person] = max(store.forgets.get(person, 0.0), record["forgot_at"])
        else:
            _import_row(store, record)
        written += 1
    return Imported(written, known, forgotten, len(settings.skipped))


def _import_row(store: Tables, record: dict[str, Any]) -> None:
    fields = {k: v for k, v in record.items() if k != "type"}
    kind = record["type"]
    if kind == "conversation":
        held = store.conversation_rows.get(record["key"])
        if held is not None:  # here, but emptied by a reset: the export's, generation moved on
            held.generation = max(held.generation, record["generation"]) + 1
            held.created_at = record["created_at"]
        else:
            store.conversation_rows[record["key"]] = ConversationRow(**fields)
    elif kind == "message":
        user = record["role"] == Role.USER.value
        importance = record.get("importance", score(record["content"]) if user else 0)
        fields.update(importance=importance, marks=record.get("marks", 0))
        fields["role"] = Role(record["role"])
        fields["message_id"] = fields.pop("platform_message_id")
        store.messages[record["id"]] = MessageRow(**fields)
    elif kind == "pin":
        store.pin_rows[record["id"]] = Pin(**fields)
    elif kind == "summary":
        fields["conversation_key"] = fields.pop("conversation")
        fields["rebuilt"] = bool(fields["rebuilt"])
        store.summaries[record["id"]] = Summary(**fields)
    elif kind == "setting":
        row = SettingRow(record["value"], record["by_id"], record["by_name"], record["at"])
        store.setting_rows.setdefault(record["scope"], {})[record["key"]] = row
    elif kind == "setting_change":
        store.setting_log[record["id"]] = SettingChange(*(record[c] for c in CHANGE_COLUMNS))


def _import_fact(store: Tables, record: dict[str, Any], forgot: dict[Person, float]) -> str:
    person = Person(record["platform"], record["workspace"], record["user_id"])
    text = record["text"].casefold()
    if any(f.person == person and f.text.casefold() == text for f in store.facts.values()):
        return "known"
    forgot_at = forgot.get(person)
    if forgot_at is not None and record["created_at"] <= forgot_at:
        return "forgotten"
    fact_id = (
        record["id"] if record["id"] not in store.facts else store.next_id("facts", store.facts)
    )
    store.facts[fact_id] = ProfileFact(
        fact_id,
        person,
        record["text"],
        record["tokens"],
        FactSource(record["source"]),
        record["created_at"],
    )
    return "written"
