"""The SQLite schema and its migrations, keyed on ``PRAGMA user_version``."""

from __future__ import annotations

import json
import logging
import sqlite3

import aiosqlite

from bot.core.memory.terms import document_terms, index_text
from bot.store.spend_sql import SQLITE_DAY, SQLITE_PICOS, backfill

MIGRATIONS: tuple[str, ...] = (
    # 1: the initial schema.
    """
    CREATE TABLE conversations (
        key TEXT PRIMARY KEY,
        channel_key TEXT NOT NULL,
        generation INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL
    );
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        conversation TEXT NOT NULL,
        reply_to INTEGER,
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
        author_id TEXT NOT NULL,
        author_name TEXT NOT NULL,
        content TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        platform_message_id TEXT,
        created_at REAL NOT NULL
    );
    CREATE INDEX messages_by_conversation ON messages (conversation, id, reply_to, tokens);
    CREATE INDEX messages_by_platform_id ON messages (conversation, platform_message_id)
        WHERE platform_message_id IS NOT NULL;
    CREATE TABLE pins (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        channel_key TEXT NOT NULL,
        text TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        author_id TEXT NOT NULL,
        author_name TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE INDEX pins_by_channel ON pins (channel_key, id);
    CREATE TABLE summaries (
        id INTEGER PRIMARY KEY,
        conversation TEXT NOT NULL,
        content TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        covers_through_turn INTEGER NOT NULL,
        message_count INTEGER NOT NULL,
        first_message_id INTEGER NOT NULL,
        last_message_id INTEGER NOT NULL,
        compactions INTEGER NOT NULL,
        rebuilt INTEGER NOT NULL,
        model TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE INDEX summaries_by_conversation ON summaries (conversation, id);
    CREATE TABLE usage (
        conversation TEXT NOT NULL,
        model TEXT NOT NULL,
        purpose TEXT NOT NULL,
        requests INTEGER NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        PRIMARY KEY (conversation, model, purpose)
    );
    CREATE TABLE calibration (
        model TEXT PRIMARY KEY,
        ratio REAL NOT NULL,
        samples INTEGER NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    """,
    # 2: recall. A full-text index of every message (rowid = messages.id, the text as
    # bot.core.memory.terms.index_text spells it) and how many messages hold each term, kept by
    # triggers in the statement that changes the message (through the recall_text and
    # recall_terms functions every connection registers); the messages' embedding vectors,
    # dropped with the message or when its text changes.
    """
    CREATE VIRTUAL TABLE message_index USING fts5 (
        body, tokenize = 'unicode61 remove_diacritics 2'
    );
    CREATE TABLE message_index_terms (
        term TEXT PRIMARY KEY,
        docs INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE message_vectors (
        message_id INTEGER PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
        model TEXT NOT NULL,
        vector BLOB NOT NULL
    );
    CREATE TRIGGER message_index_insert AFTER INSERT ON messages BEGIN
        INSERT INTO message_index (rowid, body) VALUES (new.id, recall_text(new.content));
        INSERT INTO message_index_terms (term, docs)
            SELECT value, 1 FROM json_each(recall_terms(new.content)) WHERE true
            ON CONFLICT (term) DO UPDATE SET docs = docs + 1;
    END;
    CREATE TRIGGER message_index_update AFTER UPDATE OF content ON messages BEGIN
        UPDATE message_index SET body = recall_text(new.content) WHERE rowid = new.id;
        UPDATE message_index_terms SET docs = docs - 1
            WHERE term IN (SELECT value FROM json_each(recall_terms(old.content)));
        INSERT INTO message_index_terms (term, docs)
            SELECT value, 1 FROM json_each(recall_terms(new.content)) WHERE true
            ON CONFLICT (term) DO UPDATE SET docs = docs + 1;
        DELETE FROM message_vectors WHERE message_id = new.id;
    END;
    CREATE TRIGGER message_index_delete AFTER DELETE ON messages BEGIN
        DELETE FROM message_index WHERE rowid = old.id;
        UPDATE message_index_terms SET docs = docs - 1
            WHERE term IN (SELECT value FROM json_each(recall_terms(old.content)));
    END;
    INSERT INTO message_index (rowid, body) SELECT id, recall_text(content) FROM messages;
    INSERT INTO message_index_terms (term, docs)
        SELECT value, COUNT(*) FROM messages, json_each(recall_terms(messages.content))
        GROUP BY value;
    """,
    # 3: user profiles, per person in a workspace; when each person last deleted from theirs.
    """
    CREATE TABLE profile_facts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        platform TEXT NOT NULL,
        workspace TEXT NOT NULL,
        user_id TEXT NOT NULL,
        text TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        source TEXT NOT NULL CHECK (source IN ('user', 'summary')),
        created_at REAL NOT NULL
    );
    CREATE INDEX profile_facts_by_person ON profile_facts (platform, workspace, user_id, id);
    CREATE TABLE profile_forgets (
        platform TEXT NOT NULL,
        workspace TEXT NOT NULL,
        user_id TEXT NOT NULL,
        forgot_at REAL NOT NULL,
        PRIMARY KEY (platform, workspace, user_id)
    );
    """,
    # 4: importance: the scorer's score at insert, and the 📌 reactions a message carries.
    """
    ALTER TABLE messages ADD COLUMN importance INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE messages ADD COLUMN marks INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX messages_important ON messages (conversation, id, reply_to, importance, marks)
        WHERE importance > 0 OR marks > 0;
    CREATE INDEX messages_by_turn
        ON messages (conversation, COALESCE(reply_to, id), reply_to, tokens);
    """,
    # 5: a message enters the recall index only where recall is on (a connection's TEMP
    # trigger, _INDEX_ON_INSERT, and a catch-up on open); editing or deleting a message
    # updates the index and the term counts only when the message is in the index.
    """
    DROP TRIGGER message_index_insert;
    DROP TRIGGER message_index_update;
    DROP TRIGGER message_index_delete;
    CREATE TRIGGER message_vectors_update AFTER UPDATE OF content ON messages BEGIN
        DELETE FROM message_vectors WHERE message_id = new.id;
    END;
    CREATE TRIGGER message_index_update AFTER UPDATE OF content ON messages
    WHEN EXISTS (SELECT 1 FROM message_index WHERE rowid = old.id) BEGIN
        UPDATE message_index SET body = recall_text(new.content) WHERE rowid = new.id;
        UPDATE message_index_terms SET docs = docs - 1
            WHERE term IN (SELECT value FROM json_each(recall_terms(old.content)));
        INSERT INTO message_index_terms (term, docs)
            SELECT value, 1 FROM json_each(recall_terms(new.content)) WHERE true
            ON CONFLICT (term) DO UPDATE SET docs = docs + 1;
    END;
    CREATE TRIGGER message_index_delete AFTER DELETE ON messages
    WHEN EXISTS (SELECT 1 FROM message_index WHERE rowid = old.id) BEGIN
        DELETE FROM message_index WHERE rowid = old.id;
        UPDATE message_index_terms SET docs = docs - 1
            WHERE term IN (SELECT value FROM json_each(recall_terms(old.content)));
    END;
    """,
    # 6: the index a prompt's turns are chosen from says which messages are important, so
    # that important turns are known without reading their rows; important messages are
    # found by turn, newest first, rather than by id.
    """
    DROP INDEX messages_by_conversation;
    CREATE INDEX messages_by_conversation
        ON messages (conversation, id, reply_to, tokens, importance, marks);
    DROP INDEX messages_important;
    CREATE INDEX messages_important_by_turn ON messages (conversation, COALESCE(reply_to, id))
        WHERE importance > 0 OR marks > 0;
    """,
    # 7: a journal of the changes to stored messages that change what choosing a prompt's
    # turns sees (deleted; tokens or importance changed), whichever connection makes them, so
    # that what a process kept in memory of the newest turns (a turn cache, gone since 10) stayed
    # true. message_id NULL: the whole conversation changed (reset, import, recount).
    """
    CREATE TABLE message_changes (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        conversation TEXT NOT NULL,
        message_id INTEGER,
        deleted INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX message_changes_by_conversation ON message_changes (conversation, seq);
    CREATE TRIGGER message_changes_update AFTER UPDATE OF tokens, importance, marks ON messages
    WHEN old.tokens IS NOT new.tokens
        OR (old.importance > 0 OR old.marks > 0) IS NOT (new.importance > 0 OR new.marks > 0)
    BEGIN
        INSERT INTO message_changes (conversation, message_id) VALUES (new.conversation, new.id);
    END;
    CREATE TRIGGER message_changes_delete AFTER DELETE ON messages BEGIN
        INSERT INTO message_changes (conversation, message_id, deleted)
            VALUES (old.conversation, old.id, 1);
    END;
    """,
    # 8: a conversation's latest summary is known from the index alone (id and time made), so
    # that a prompt reads the summary's row (a few pages of text) only when it is a new one.
    """
    DROP INDEX summaries_by_conversation;
    CREATE INDEX summaries_by_conversation ON summaries (conversation, id, created_at);
    """,
    # 9: a platform message is stored once per conversation, whichever process or delivery
    # brings it: the first copy of an earlier duplicate is kept (answers to a later copy now
    # hang from it). The platform requests (slash commands) already acted on, by their id.
    """
    CREATE TEMP TABLE duplicate_messages AS
        SELECT d.id AS id, (
            SELECT MIN(k.id) FROM messages k
            WHERE k.conversation = d.conversation AND k.platform_message_id = d.platform_message_id
        ) AS kept
        FROM messages d WHERE d.platform_message_id IS NOT NULL;
    DELETE FROM duplicate_messages WHERE id = kept;
    UPDATE messages SET reply_to = (SELECT kept FROM duplicate_messages WHERE id = reply_to)
        WHERE reply_to IN (SELECT id FROM duplicate_messages);
    DELETE FROM messages WHERE id IN (SELECT id FROM duplicate_messages);
    DROP TABLE duplicate_messages;
    DROP INDEX messages_by_platform_id;
    CREATE UNIQUE INDEX messages_by_platform_id ON messages (conversation, platform_message_id)
        WHERE platform_message_id IS NOT NULL;
    CREATE TABLE handled_requests (
        request_id TEXT PRIMARY KEY,
        handled_at REAL NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX handled_requests_by_time ON handled_requests (handled_at);
    """,
    # 10: no Python in the database, term counts per conversation, no journal. The full-text
    # index and each conversation's term counts are written by the store
    # (bot.store.sqlite.search) in the transaction that changes the message, and filled on
    # open. Each conversation counts its messages (plain SQL triggers), so that how common a
    # term is within it is known at once. A prompt's turns are read from one covering index.
    """
    DROP TRIGGER message_index_update;
    DROP TRIGGER message_index_delete;
    DROP TRIGGER message_changes_update;
    DROP TRIGGER message_changes_delete;
    DROP TABLE message_changes;
    DROP TABLE message_index_terms;
    DROP TABLE message_index;
    CREATE VIRTUAL TABLE message_index USING fts5 (
        body, tokenize = 'unicode61 remove_diacritics 2'
    );
    CREATE TABLE search_terms (
        conversation TEXT NOT NULL,
        term TEXT NOT NULL,
        docs INTEGER NOT NULL,
        PRIMARY KEY (conversation, term)
    ) WITHOUT ROWID;
    ALTER TABLE conversations ADD COLUMN messages INTEGER NOT NULL DEFAULT 0;
    UPDATE conversations SET messages =
        (SELECT COUNT(*) FROM messages m WHERE m.conversation = conversations.key);
    CREATE TRIGGER conversation_messages_insert AFTER INSERT ON messages BEGIN
        UPDATE conversations SET messages = messages + 1 WHERE key = new.conversation;
    END;
    CREATE TRIGGER conversation_messages_delete AFTER DELETE ON messages BEGIN
        UPDATE conversations SET messages = messages - 1 WHERE key = old.conversation;
    END;
    DROP INDEX messages_by_turn;
    CREATE INDEX messages_by_turn
        ON messages (conversation, COALESCE(reply_to, id), id, tokens, importance, marks);
    """,
    # 11: several processes on one database. Leases on work one of them does at a time, by
    # the database's clock; the messages awaiting an answer and the process answering each,
    # so that answers keep their conversation's order and a process that dies is taken over.
    """
    CREATE TABLE leases (
        name TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        expires_at REAL NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE awaiting (
        message_id INTEGER PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
        conversation TEXT NOT NULL,
        platform TEXT NOT NULL,
        holder TEXT NOT NULL,
        queued_at REAL NOT NULL,
        shown_as TEXT
    );
    CREATE INDEX awaiting_by_conversation ON awaiting (conversation, message_id);
    CREATE INDEX awaiting_by_platform ON awaiting (platform, message_id);
    """,
    # 12: a tokenizer's calibration is fitted per script from the newest prompts' counts (ours
    # split into Latin, CJK and other scripts; the server's), no longer kept as one ratio. A
    # model's ratio so far is carried over as one sample of 1,000 Latin tokens.
    """
    CREATE TABLE calibration_samples (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        model TEXT NOT NULL,
        latin_tokens INTEGER NOT NULL,
        cjk_tokens INTEGER NOT NULL,
        other_tokens INTEGER NOT NULL,
        reported_tokens INTEGER NOT NULL,
        observed_at REAL NOT NULL
    );
    CREATE INDEX calibration_samples_by_model ON calibration_samples (model, id);
    INSERT INTO calibration_samples
        (model, latin_tokens, cjk_tokens, other_tokens, reported_tokens, observed_at)
        SELECT model, 1000, 0, 0, CAST(ROUND(1000 * ratio) AS INTEGER), updated_at
        FROM calibration ORDER BY model;
    DROP TABLE calibration;
    """,
    # 13: of a conversation's requests to a model, those whose tokens the bot counted itself
    # (a server that sent no usage, a stream cut off before its end).
    """
    ALTER TABLE usage ADD COLUMN estimated INTEGER NOT NULL DEFAULT 0;
    """,
    # 14: settings set in chat (/settings) per channel or thread: each scope's values, who set
    # each and when, found by value too (the channels of a memory group); and every change,
    # read newest first per scope.
    """
    CREATE TABLE settings (
        scope TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        by_id TEXT NOT NULL,
        by_name TEXT NOT NULL,
        at REAL NOT NULL,
        PRIMARY KEY (scope, key)
    ) WITHOUT ROWID;
    CREATE INDEX settings_by_value ON settings (key, value, scope);
    CREATE TABLE setting_changes (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        scope TEXT NOT NULL,
        key TEXT NOT NULL,
        old TEXT,
        new TEXT,
        by_id TEXT NOT NULL,
        by_name TEXT NOT NULL,
        at REAL NOT NULL
    );
    CREATE INDEX setting_changes_by_scope ON setting_changes (scope, id);
    """,
    # 15: the ledger: every call to a model, where (conversation, its channel, its workspace as
    # platform:workspace; '' for none) and for whom it was made, its tokens and cost. Summed
    # over a time range per channel, per person in a workspace, per workspace or overall.
    """
    CREATE TABLE model_calls (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at REAL NOT NULL,
        conversation TEXT NOT NULL,
        channel_key TEXT NOT NULL,
        workspace TEXT NOT NULL,
        person TEXT NOT NULL,
        model TEXT NOT NULL,
        purpose TEXT NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        cached_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        cost REAL NOT NULL,
        estimated INTEGER NOT NULL CHECK (estimated IN (0, 1))
    );
    CREATE INDEX model_calls_by_time ON model_calls (at);
    CREATE INDEX model_calls_by_channel ON model_calls (channel_key, at);
    CREATE INDEX model_calls_by_workspace ON model_calls (workspace, at);
    CREATE INDEX model_calls_by_person ON model_calls (workspace, person, at);
    """,
    # 16: the prompt log: the latest prompts of each channel (its threads' with it) as sent,
    # for the page: what each answer was made from, its layers' tokens (a JSON object), its
    # messages (a JSON array of role and content) and what recall put in it and why (JSON).
    # Read newest first per channel; deleted per conversation by a reset, per asker (person, a
    # platform user id) by /forget.
    """
    CREATE TABLE prompt_log (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at REAL NOT NULL,
        conversation TEXT NOT NULL,
        channel_key TEXT NOT NULL,
        question_id INTEGER NOT NULL,
        question TEXT NOT NULL,
        person TEXT NOT NULL,
        model TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        budget INTEGER NOT NULL,
        layers TEXT NOT NULL,
        messages TEXT NOT NULL,
        recall TEXT NOT NULL
    );
    CREATE INDEX prompt_log_by_channel ON prompt_log (channel_key, id);
    CREATE INDEX prompt_log_by_conversation ON prompt_log (conversation);
    CREATE INDEX prompt_log_by_person ON prompt_log (person);
    """,
    # 17: the ledger's daily rollups, filled from the calls kept: per channel, workspace or
    # person in a workspace ('' for the others), UTC day (its midnight in seconds since the
    # epoch) and model, the calls' sums, cost in whole picodollars (bot/store/spend_sql.py).
    """
    CREATE TABLE spend_days (
        kind TEXT NOT NULL CHECK (kind IN ('channel', 'workspace', 'person')),
        key TEXT NOT NULL,
        person TEXT NOT NULL,
        day INTEGER NOT NULL,
        model TEXT NOT NULL,
        requests INTEGER NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        cached_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        cost INTEGER NOT NULL,
        PRIMARY KEY (kind, key, person, day, model)
    ) WITHOUT ROWID;
    """
    + backfill(SQLITE_DAY, SQLITE_PICOS),
)

SCHEMA_VERSION = len(MIGRATIONS)
PLAIN_SQL = 10
"""The first version whose triggers are plain SQL: migrating from before it runs triggers
(and statements) that call the Python functions of :func:`_register_legacy_functions`."""

log = logging.getLogger(__name__)


class DatabaseError(Exception):
    """The database cannot be opened or is newer than this version understands."""


def statements(script: str) -> list[str]:
    """The statements of ``script`` (a trigger's body holds ``;`` too)."""
    found: list[str] = []
    pending = ""
    for part in script.split(";"):
        pending += part + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                found.append(pending.strip())
            pending = ""
    return found


async def version(db: aiosqlite.Connection) -> int:
    rows = await db.execute_fetchall("PRAGMA user_version")
    return int(next(iter(rows))[0])


async def check_version(db: aiosqlite.Connection, path: str) -> None:
    """A database a newer bot has migrated is refused (it may hold what this version would
    not keep right)."""
    found = await version(db)
    if found > SCHEMA_VERSION:
        raise DatabaseError(
            f"database {path} was written by a newer version of the bot (schema"
            f" {found}; this one knows {SCHEMA_VERSION}): upgrade the bot, or restore"
            " a backup taken before"
        )


def legacy_terms(text: str) -> str:
    """What the ``recall_terms`` function of versions 2 to 9 returned: a message's terms as a
    JSON list (their triggers call it)."""
    return json.dumps(sorted(document_terms(text)), ensure_ascii=False)


async def _register_legacy_functions(db: aiosqlite.Connection) -> None:
    await db.create_function("recall_text", 1, index_text, deterministic=True)
    await db.create_function("recall_terms", 1, legacy_terms, deterministic=True)


async def migrate(db: aiosqlite.Connection, path: str) -> None:
    """Take the database to :data:`SCHEMA_VERSION`, one transaction per version (the caller
    turns a refused statement into its error). Processes opening the file at the same time
    migrate it once: each version is read again under the write lock, and a version another
    process has already taken the file past is skipped."""
    current = await version(db)
    if 0 < current < SCHEMA_VERSION:
        log.info("migrating %s from schema %d to %d", path, current, SCHEMA_VERSION)
    if current < PLAIN_SQL:
        await _register_legacy_functions(db)
    for number in range(current, SCHEMA_VERSION):
        await db.execute("BEGIN IMMEDIATE")
        try:
            if await version(db) == number:
                for statement in statements(MIGRATIONS[number]):
                    await db.execute(statement)
                await db.execute(f"PRAGMA user_version = {number + 1}")
        except BaseException:
            if db.in_transaction:
                await db.execute("ROLLBACK")
            raise
        await db.execute("COMMIT")
