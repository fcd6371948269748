"""The SQLite store: one file, WAL, a busy timeout, migrations by ``PRAGMA user_version``."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any, Literal

import aiosqlite

from bot.core.memory.terms import document_terms, index_text, match_expression
from bot.core.models import (
    Conversation,
    FactSource,
    Person,
    Pin,
    ProfileFact,
    Role,
    StoredMessage,
    Summary,
    render_content,
)
from bot.core.ports.store import (
    Calibration,
    ConversationInfo,
    Duplicate,
    NewestMessage,
    NewSummary,
    StorageError,
    TurnCost,
    UsageTotals,
)
from bot.store import archive
from bot.store.archive import MARK_CONVERSATION
from bot.store.sqlite.rowcache import RowCache
from bot.store.sqlite.turncache import TurnCache

_MIGRATIONS: tuple[str, ...] = (
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
    # that what a process keeps in memory of the newest turns (bot.store.sqlite.turncache) stays
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
)

_INDEX_ON_INSERT = """
CREATE TEMP TRIGGER IF NOT EXISTS message_index_insert AFTER INSERT ON main.messages BEGIN
    INSERT INTO message_index (rowid, body) VALUES (new.id, recall_text(new.content));
    INSERT INTO message_index_terms (term, docs)
        SELECT value, 1 FROM json_each(recall_terms(new.content)) WHERE true
        ON CONFLICT (term) DO UPDATE SET docs = docs + 1;
END
"""
_CATCH_UP = (  # the term counts first: both read which messages the index lacks
    "INSERT INTO message_index_terms (term, docs)"
    " SELECT value, COUNT(*) FROM messages, json_each(recall_terms(messages.content))"
    " WHERE messages.id NOT IN (SELECT rowid FROM message_index) GROUP BY value"
    " ON CONFLICT (term) DO UPDATE SET docs = docs + excluded.docs",
    "INSERT INTO message_index (rowid, body) SELECT id, recall_text(content) FROM messages"
    " WHERE id NOT IN (SELECT rowid FROM message_index)",
)

SCHEMA_VERSION = len(_MIGRATIONS)

_MESSAGE_COLUMNS = (
    "id, COALESCE(reply_to, id), role, author_id, author_name, content, tokens, created_at, "
    "platform_message_id, importance > 0 OR marks > 0"
)
_MESSAGE_COLUMNS_M = (  # the same, from ``messages m`` in a join
    "m.id, COALESCE(m.reply_to, m.id), m.role, m.author_id, m.author_name, m.content, m.tokens,"
    " m.created_at, m.platform_message_id, m.importance > 0 OR m.marks > 0"
)
_FACT_COLUMNS = "id, platform, workspace, user_id, text, tokens, source, created_at"
_SUMMARY_COLUMNS = (
    "id, conversation, content, tokens, covers_through_turn, message_count, first_message_id, "
    "last_message_id, compactions, rebuilt, model, created_at"
)
_LATEST_SUMMARY = (
    f"SELECT {_SUMMARY_COLUMNS} FROM summaries WHERE conversation = ?"  # noqa: S608
    " ORDER BY id DESC LIMIT 1"
)
_LATEST_SUMMARY_KEY = (  # from the index alone
    "SELECT id, created_at FROM summaries WHERE conversation = ? ORDER BY id DESC LIMIT 1"
)
_HELD_SUMMARIES = 1024  # conversations whose latest summary is kept in memory


def _statements(script: str) -> list[str]:
    """The statements of ``script`` (a trigger's body holds ``;`` too)."""
    statements: list[str] = []
    pending = ""
    for part in script.split(";"):
        pending += part + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                statements.append(pending.strip())
            pending = ""
    return statements


log = logging.getLogger(__name__)


def _file_id(path: str) -> tuple[int, int]:
    status = os.stat(path)
    return status.st_dev, status.st_ino


def _file_problem(path: str, opened: tuple[int, int], wal: tuple[int, int] | None) -> str | None:
    """A database file (or its WAL) deleted or replaced under the open connection: what
    it commits from then on is lost when the process ends. A WAL deleted under the bot may be
    made anew by a connection's first read, so the WAL is told by its inode, not its name."""
    try:
        if _file_id(path) != opened:
            return f"{path} was replaced while open"
    except OSError:
        return f"{path} was deleted while open"
    try:
        same_wal = wal is None or _file_id(f"{path}-wal") == wal
    except OSError:
        same_wal = False
    if not same_wal:
        return f"{path}-wal was deleted while open: what is written since dies with the bot"
    return None


_SYNCHRONOUS = {"full": "FULL", "normal": "NORMAL"}


def _open_reader(path: str, busy_timeout_ms: int) -> sqlite3.Connection:
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    reader.execute("PRAGMA query_only = ON")
    return reader


class DatabaseError(Exception):
    """The database cannot be opened or is newer than this version understands."""


_ROLES = {role.value: role for role in Role}


def _message(row: Any) -> StoredMessage:
    return StoredMessage(
        row[0], row[1], _ROLES[row[2]], row[3], row[4], row[5], row[6], row[7], row[8], bool(row[9])
    )


def _fact(row: Any) -> ProfileFact:
    return ProfileFact(
        id=row[0],
        person=Person(row[1], row[2], row[3]),
        text=row[4],
        tokens=row[5],
        source=FactSource(row[6]),
        created_at=row[7],
    )


def _summary(row: Any) -> Summary:
    return Summary(
        id=row[0],
        conversation_key=row[1],
        content=row[2],
        tokens=row[3],
        covers_through_turn=row[4],
        message_count=row[5],
        first_message_id=row[6],
        last_message_id=row[7],
        compactions=row[8],
        rebuilt=bool(row[9]),
        model=row[10],
        created_at=row[11],
    )


class SqliteStore:
    """Implements :class:`bot.core.ports.store.Store` on an aiosqlite connection, plus a read-only
    connection for the short reads a prompt is built from.

    Writes go through one lock so that a multi-statement transaction never interleaves with
    another task's statements on the shared connection.

    The reads a prompt needs (pins, summary, the window's costs, a few rows by index, recall's
    search) are shorter than a round trip through aiosqlite's thread, so they run at once, on
    the event loop's thread, through the second connection (``_read``). WAL lets it read every
    committed write without waiting for a writer. Reads that can be long (whole histories,
    exports, counts, vectors) and every write stay on the aiosqlite connection. A database
    that is not in WAL mode (or ``:memory:``) has no second connection: everything goes
    through aiosqlite.
    """

    def __init__(self, db: aiosqlite.Connection, path: str) -> None:
        self._db = db
        self._reader: sqlite3.Connection | None = None  # opened once migrated (``open``)
        self.path = path
        self._write_lock = asyncio.Lock()
        self.write_failure: str | None = None
        """Why the last write failed; None once one succeeds."""
        self._incident = 0
        self.on_write_failure: Callable[[], None] = lambda: None
        self._file_id: tuple[int, int] | None = None  # the file's device and inode
        self._wal_id: tuple[int, int] | None = None  # and its WAL's
        self._opened = False
        self._known: set[str] = set()
        self._rows = RowCache()
        self._turns = TurnCache(self._read)
        # Each conversation's latest summary, as read last (``latest_summary``).
        self._summaries: dict[str, Summary] = {}

    @classmethod
    async def open(
        cls,
        path: str,
        *,
        busy_timeout_ms: int = 5000,
        index: bool = True,
        synchronous: Literal["full", "normal"] = "full",
    ) -> SqliteStore:
        """Open (and migrate) the database. ``index``: messages stored through this
        connection enter recall's search index (and those stored without it are indexed
        now); off, storing a message does no indexing work at all (recall is off).
        ``synchronous``: full, every commit is on disk when it returns; normal, a power
        loss can drop the last commits."""
        if path != ":memory:":
            try:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise DatabaseError(
                    f"cannot open database {path}: {archive.os_reason(exc, Path(path).parent)}"
                ) from exc
        try:
            # Refusals come from here: aiosqlite's thread outlives a failed connect.
            sqlite3.connect(path).close()
            db = await aiosqlite.connect(path, isolation_level=None)
        except Exception as exc:
            raise DatabaseError(f"cannot open database {path}: {exc}") from exc
        store = cls(db, path)
        try:
            await db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            await store._check_version()  # before anything is written
            journal = await db.execute_fetchall("PRAGMA journal_mode = WAL")
            await db.execute(f"PRAGMA synchronous = {_SYNCHRONOUS[synchronous]}")
            await db.execute("PRAGMA foreign_keys = ON")
            damage = await store.integrity_check()
            if damage != "ok":
                raise DatabaseError(f"database {path} is damaged: {damage.splitlines()[0]}")
            await db.create_function("recall_text", 1, index_text, deterministic=True)
            await db.create_function("recall_terms", 1, document_terms, deterministic=True)
            await store._migrate()
            if index:
                await store._index_new_messages()
            if path != ":memory:" and next(iter(journal))[0] == "wal":
                store._reader = _open_reader(path, busy_timeout_ms)
                store._file_id = _file_id(path)
                with suppress(OSError):  # a read in WAL mode has made it
                    store._wal_id = _file_id(f"{path}-wal")
        except (sqlite3.Error, StorageError) as exc:
            await db.close()
            cause = exc.cause if isinstance(exc, StorageError) else str(exc)
            if "fts5" in cause:
                raise DatabaseError(
                    f"this Python's SQLite ({sqlite3.sqlite_version}) lacks FTS5, which recall's "
                    "search index needs; use a standard CPython build (or the Docker image)"
                ) from exc
            raise DatabaseError(f"cannot open database {path}: {cause}") from exc
        except Exception:
            await db.close()
            raise
        store._opened = True
        return store

    async def _read(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[Any]:
        """A short read: on this thread through the read connection, when there is one."""
        if self._reader is None:
            return list(await self._db.execute_fetchall(sql, params))
        return self._reader.execute(sql, params).fetchall()

    async def _version(self) -> int:
        rows = await self._db.execute_fetchall("PRAGMA user_version")
        return int(next(iter(rows))[0])

    async def _check_version(self) -> None:
        """A database a newer bot has migrated is refused (it may hold what this version
        would not keep right)."""
        version = await self._version()
        if version > SCHEMA_VERSION:
            raise DatabaseError(
                f"database {self.path} was written by a newer version of the bot (schema"
                f" {version}; this one knows {SCHEMA_VERSION}): upgrade the bot, or restore"
                " a backup taken before"
            )

    async def _migrate(self) -> None:
        version = await self._version()
        if 0 < version < SCHEMA_VERSION:
            log.info("migrating %s from schema %d to %d", self.path, version, SCHEMA_VERSION)
        for number in range(version, SCHEMA_VERSION):
            async with self._transaction():
                for statement in _statements(_MIGRATIONS[number]):
                    await self._db.execute(statement)
                await self._db.execute(f"PRAGMA user_version = {number + 1}")

    async def _index_new_messages(self) -> None:
        """Index the messages stored while indexing was off, then index every message this
        connection stores, in the statement that stores it."""
        async with self._transaction():
            # The index only ever holds stored messages: the same count means it holds them all.
            rows = await self._db.execute_fetchall(
                "SELECT (SELECT COUNT(*) FROM messages) - (SELECT COUNT(*) FROM message_index)"
            )
            if next(iter(rows))[0]:
                for statement in _CATCH_UP:
                    await self._db.execute(statement)
            await self._db.execute(_INDEX_ON_INSERT)

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        """Hold the write lock; a write SQLite refuses becomes :class:`StorageError`."""
        async with self._write_lock:
            try:
                yield
            except sqlite3.Error as exc:
                await self._abandon()
                raise self._failed(exc) from exc
        if self.write_failure is not None:
            log.warning("writes to %s succeed again", self.path)
            self.write_failure = None

    async def _abandon(self) -> None:
        """Roll back what a failed statement left open (SQLite may keep a transaction open
        when its commit fails), so that a later commit cannot carry it in."""
        if self._db.in_transaction:
            with suppress(sqlite3.Error):
                await self._db.execute("ROLLBACK")

    def _failed(self, exc: sqlite3.Error) -> StorageError:
        cause = str(exc) or type(exc).__name__
        if self.write_failure is None:
            self._incident += 1
        self.write_failure = cause
        self.on_write_failure()
        if self._opened:  # while opening, the caller names the failure itself
            log.error("storage write to %s failed: %s", self.path, cause)
        return StorageError(self.path, cause, incident=self._incident)

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[None]:
        async with self._writing():
            await self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                if self._db.in_transaction:
                    await self._db.execute("ROLLBACK")
                raise
            await self._db.execute("COMMIT")

    async def _write(self, sql: str, params: Sequence[Any]) -> int:
        async with self._writing():
            cursor = await self._db.execute(sql, params)
            return cursor.rowcount

    async def _ensure_conversation(self, conversation: Conversation) -> None:
        if conversation.key in self._known:
            return
        await self._write(
            "INSERT OR IGNORE INTO conversations (key, channel_key, created_at) VALUES (?, ?, ?)",
            (conversation.key, conversation.channel_key, time.time()),
        )
        self._known.add(conversation.key)

    async def generation(self, *, conversation_key: str) -> int:
        rows = await self._db.execute_fetchall(
            "SELECT generation FROM conversations WHERE key = ?", (conversation_key,)
        )
        return next((row[0] for row in rows), 0)

    async def add_message(
        self,
        *,
        conversation: Conversation,
        role: Role,
        author_id: str,
        author_name: str,
        content: str,
        tokens: int,
        message_id: str | None,
        created_at: float,
        reply_to: int | None = None,
        importance: int = 0,
    ) -> StoredMessage:
        await self._ensure_conversation(conversation)
        async with self._writing():
            cursor = await self._db.execute(
                "INSERT INTO messages (conversation, reply_to, role, author_id, author_name,"
                " content, tokens, platform_message_id, created_at, importance)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (
                    conversation.key,
                    reply_to,
                    role.value,
                    author_id,
                    author_name,
                    content,
                    tokens,
                    message_id,
                    created_at,
                    importance,
                ),
            )
            inserted, new_id = cursor.rowcount, cursor.lastrowid
        if inserted < 1 or new_id is None:
            assert message_id is not None  # only a platform id can collide
            existing = await self.find_message(
                conversation_key=conversation.key, message_id=message_id
            )
            assert existing is not None
            raise Duplicate(existing)
        stored = StoredMessage(
            id=new_id,
            turn_id=reply_to if reply_to is not None else new_id,
            role=role,
            author_id=author_id,
            author_name=author_name,
            content=content,
            tokens=tokens,
            created_at=created_at,
            message_id=message_id,
            important=importance > 0,
        )
        self._rows.add(conversation.key, stored)
        return stored

    async def edit_message(
        self,
        *,
        conversation_key: str,
        message_id: str,
        content: str,
        tokens: int,
        importance: int | None = None,
    ) -> bool:
        changed = await self._write(
            "UPDATE messages SET content = ?, tokens = ?, importance = COALESCE(?, importance)"
            " WHERE conversation = ? AND platform_message_id = ?",
            (content, tokens, importance, conversation_key, message_id),
        )
        self._rows.drop(conversation_key, platform_id=message_id)
        return changed > 0

    async def mark_message(self, *, channel_key: str, message_id: str, delta: int) -> bool:
        changed = await self._write(
            "UPDATE messages SET marks = MAX(marks + ?, 0)"
            " WHERE conversation IN (SELECT key FROM conversations WHERE channel_key = ?)"
            " AND platform_message_id = ?",
            (delta, channel_key, message_id),
        )
        for key in self._rows.conversations():  # the channel's and its threads' conversations
            if Conversation.from_key(key).channel_key == channel_key:
                self._rows.drop(key, platform_id=message_id)
        return changed > 0

    async def important_turns(
        self,
        *,
        conversation_key: str,
        through_id: int,
        after_turn: int,
        through_turn: int,
        turns: int,
    ) -> Sequence[TurnCost]:
        return await self._turns.important(
            conversation_key,
            through_id=through_id,
            after_turn=after_turn,
            through_turn=through_turn,
            turns=turns,
        )

    async def set_message_id(
        self, *, conversation_key: str, stored_id: int, message_id: str
    ) -> bool:
        changed = await self._write(
            "UPDATE messages SET platform_message_id = ? WHERE conversation = ? AND id = ?",
            (message_id, conversation_key, stored_id),
        )
        self._rows.drop_id(conversation_key, stored_id)
        return changed > 0

    async def delete_message(self, *, conversation_key: str, message_id: str) -> bool:
        changed = await self._write(
            "DELETE FROM messages WHERE conversation = ? AND platform_message_id = ?",
            (conversation_key, message_id),
        )
        self._rows.drop(conversation_key, platform_id=message_id)
        return changed > 0

    async def newest_messages(self, *, platform: str, since: float) -> Sequence[NewestMessage]:
        # SQLite takes the bare columns from the row holding MAX(created_at).
        rows = await self._read(
            "SELECT conversation, platform_message_id, MAX(created_at) FROM messages"
            " WHERE role = 'user' AND platform_message_id IS NOT NULL AND created_at >= ?"
            " AND substr(conversation, 1, ?) = ?"
            " GROUP BY conversation ORDER BY MAX(created_at) DESC",
            (since, len(platform) + 1, f"{platform}:"),
        )
        return [NewestMessage(str(key), str(mid), float(at)) for key, mid, at in rows]

    async def find_message(self, *, conversation_key: str, message_id: str) -> StoredMessage | None:
        rows = await self._read(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
            " WHERE conversation = ? AND platform_message_id = ? LIMIT 1",
            (conversation_key, message_id),
        )
        return next((_message(row) for row in rows), None)

    async def recent_messages(
        self, *, conversation_key: str, through_id: int, after_turn: int, limit: int
    ) -> Sequence[StoredMessage]:
        # A message's turn is never later than its id, so ``id > after_turn`` bounds the
        # index range without losing a row.
        rows = await self._read(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
            " WHERE conversation = ? AND id > ? AND id <= ? AND COALESCE(reply_to, id) > ?"
            " ORDER BY id DESC LIMIT ?",
            (conversation_key, after_turn, through_id, after_turn, limit),
        )
        return [_message(row) for row in rows]

    async def turn_costs(
        self,
        *,
        conversation_key: str,
        through_id: int,
        after_turn: int,
        before_turn: int | None,
        limit: int,
    ) -> Sequence[TurnCost]:
        return await self._turns.turns(
            conversation_key,
            through_id=through_id,
            after_turn=after_turn,
            before_turn=before_turn,
            limit=limit,
        )

    async def messages_between(
        self, *, conversation_key: str, first_id: int, through_id: int
    ) -> Sequence[StoredMessage]:
        rows = await self._db.execute_fetchall(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
            " WHERE conversation = ? AND id >= ? AND id <= ? ORDER BY id",
            (conversation_key, first_id, through_id),
        )
        return [_message(row) for row in rows]

    async def window_messages(
        self, *, conversation_key: str, ids: Sequence[int]
    ) -> Sequence[StoredMessage]:
        # Served from the row cache; only rows it lacks (usually none) are read, in one range.
        held = self._rows.window(conversation_key, ids)
        if held is not None or not ids:
            return held or []
        found = self._rows.get_many(conversation_key, ids)
        missing = [i for i, row in zip(ids, found, strict=True) if row is None]
        wanted = set(missing)
        rows = await self._read(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
            " WHERE conversation = ? AND id >= ? AND id <= ? ORDER BY id",
            (conversation_key, min(missing), max(missing)),
        )
        read = {row.id: row for row in map(_message, rows) if row.id in wanted}
        found = [read.get(i) if row is None else row for i, row in zip(ids, found, strict=True)]
        window = [row for row in found if row is not None]
        self._rows.keep(conversation_key, window)
        return window

    async def messages_after_turn(
        self, *, conversation_key: str, after_turn: int, limit: int
    ) -> Sequence[StoredMessage]:
        rows = await self._db.execute_fetchall(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
            " WHERE conversation = ? AND id > ? AND COALESCE(reply_to, id) > ?"
            " ORDER BY id LIMIT ?",
            (conversation_key, after_turn, after_turn, limit),
        )
        return [_message(row) for row in rows]

    async def messages_through_turn(
        self, *, conversation_key: str, through_turn: int, after_id: int, limit: int
    ) -> Sequence[StoredMessage]:
        rows = await self._db.execute_fetchall(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
            " WHERE conversation = ? AND id > ? AND COALESCE(reply_to, id) <= ?"
            " ORDER BY id LIMIT ?",
            (conversation_key, after_id, through_turn, limit),
        )
        return [_message(row) for row in rows]

    async def last_message_id(self, *, conversation_key: str) -> int | None:
        rows = await self._read(
            "SELECT MAX(id) FROM messages WHERE conversation = ?", (conversation_key,)
        )
        value = next(iter(rows))[0]
        return int(value) if value is not None else None

    async def count_messages(self, *, conversation_key: str) -> int:
        rows = await self._db.execute_fetchall(
            "SELECT COUNT(*) FROM messages WHERE conversation = ?", (conversation_key,)
        )
        return int(next(iter(rows))[0])

    async def has_answered(self, *, conversation_key: str) -> bool:
        rows = await self._read(
            "SELECT 1 FROM messages WHERE conversation = ? AND role = ? LIMIT 1",
            (conversation_key, Role.ASSISTANT.value),
        )
        return bool(rows)

    # -- recall ---------------------------------------------------------------------------

    async def term_counts(self, *, conversation_key: str, terms: Sequence[str]) -> dict[str, int]:
        """How many stored messages hold each term (still over every conversation)."""
        if not terms:
            return {}
        marks = ", ".join("?" for _ in terms)
        rows = await self._read(
            f"SELECT term, docs FROM message_index_terms WHERE term IN ({marks})",  # noqa: S608
            list(terms),
        )
        return {str(row[0]): int(row[1]) for row in rows}

    async def search_messages(
        self, *, conversation_key: str, terms: Sequence[str], before_id: int, limit: int
    ) -> Sequence[tuple[StoredMessage, float]]:
        """The conversation's messages before ``before_id`` holding any of ``terms`` with
        their bm25 score, best first (the higher the score, the better)."""
        match = match_expression(list(terms))
        rows = await self._read(
            f"SELECT {_MESSAGE_COLUMNS_M}, -bm25(message_index) AS score"  # noqa: S608
            " FROM message_index CROSS JOIN messages m ON m.id = message_index.rowid"
            " WHERE message_index MATCH ? AND message_index.rowid < ? AND m.conversation = ?"
            " ORDER BY score DESC LIMIT ?",
            (match, before_id, conversation_key, limit),
        )
        return [(_message(row), float(row[-1])) for row in rows]

    async def messages_by_id(
        self, *, conversation_key: str, ids: Sequence[int]
    ) -> Sequence[StoredMessage]:
        if not ids:
            return []
        marks = ", ".join("?" for _ in ids)
        rows = await self._read(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
            f" WHERE conversation = ? AND id IN ({marks}) ORDER BY id",
            (conversation_key, *ids),
        )
        return [_message(row) for row in rows]

    async def save_vector(
        self, *, message_id: int, content: str, model: str, vector: bytes
    ) -> bool:
        """Store a message's embedding, unless the message is gone or its text changed."""
        changed = await self._write(
            "INSERT OR REPLACE INTO message_vectors (message_id, model, vector)"
            " SELECT id, ?, ? FROM messages WHERE id = ? AND content = ?",
            (model, vector, message_id, content),
        )
        return changed > 0

    async def unembedded(
        self, *, before_id: int | None, model: str, limit: int
    ) -> Sequence[tuple[int, str]]:
        """``(id, content)`` of the newest messages (of any conversation) before ``before_id``
        without a ``model`` vector."""
        rows = await self._db.execute_fetchall(
            "SELECT m.id, m.content FROM messages m WHERE m.id < ? AND NOT EXISTS"
            " (SELECT 1 FROM message_vectors v WHERE v.message_id = m.id AND v.model = ?)"
            " ORDER BY m.id DESC LIMIT ?",
            (before_id if before_id is not None else 2**63 - 1, model, limit),
        )
        return [(int(row[0]), str(row[1])) for row in rows]

    async def vector(self, *, message_id: int, model: str) -> bytes | None:
        rows = await self._read(
            "SELECT vector FROM message_vectors WHERE message_id = ? AND model = ?",
            (message_id, model),
        )
        return next((bytes(row[0]) for row in rows), None)

    async def vectors(
        self, *, conversation_key: str, before_id: int, model: str, limit: int
    ) -> Sequence[tuple[int, bytes]]:
        """``(message id, vector)`` of the newest ``limit`` embedded messages before
        ``before_id``."""
        rows = await self._db.execute_fetchall(
            "SELECT m.id, v.vector FROM messages m JOIN message_vectors v ON v.message_id = m.id"
            " WHERE m.conversation = ? AND m.id < ? AND v.model = ? ORDER BY m.id DESC LIMIT ?",
            (conversation_key, before_id, model, limit),
        )
        return [(int(row[0]), bytes(row[1])) for row in rows]

    async def add_pin(
        self, *, channel_key: str, text: str, tokens: int, author_id: str, author_name: str
    ) -> Pin:
        created_at = time.time()
        async with self._writing():
            row = await self._db.execute_insert(
                "INSERT INTO pins (channel_key, text, tokens, author_id, author_name, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (channel_key, text, tokens, author_id, author_name, created_at),
            )
        assert row is not None
        return Pin(int(row[0]), channel_key, text, tokens, author_name, created_at, author_id)

    async def remove_pin(self, *, channel_key: str, pin_id: int) -> bool:
        changed = await self._write(
            "DELETE FROM pins WHERE channel_key = ? AND id = ?", (channel_key, pin_id)
        )
        return changed > 0

    async def pins(self, *, channel_key: str) -> Sequence[Pin]:
        rows = await self._read(
            "SELECT id, channel_key, text, tokens, author_name, created_at, author_id FROM pins"
            " WHERE channel_key = ? ORDER BY id",
            (channel_key,),
        )
        return [Pin(*row) for row in rows]

    async def pins_and_profile(
        self, *, channel_key: str, person: Person
    ) -> tuple[Sequence[Pin], Sequence[ProfileFact]]:
        # One query for both: a prompt needs them together, and most people have no facts.
        rows = await self._read(
            "SELECT 0, id, channel_key, text, tokens, author_name, created_at, author_id, NULL"  # noqa: S608 (constant columns)
            " FROM pins WHERE channel_key = ?"
            f" UNION ALL SELECT 1, {_FACT_COLUMNS} FROM profile_facts"
            " WHERE platform = ? AND workspace = ? AND user_id = ? ORDER BY 1, 2",
            (channel_key, person.platform, person.workspace, person.user_id),
        )
        pins = [Pin(*row[1:8]) for row in rows if row[0] == 0]
        facts = [_fact(row[1:]) for row in rows if row[0] == 1]
        return pins, facts

    async def add_profile_fact(
        self, *, person: Person, text: str, tokens: int, source: FactSource
    ) -> ProfileFact:
        created_at = time.time()
        async with self._writing():
            row = await self._db.execute_insert(
                "INSERT INTO profile_facts (platform, workspace, user_id, text, tokens, source,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    person.platform,
                    person.workspace,
                    person.user_id,
                    text,
                    tokens,
                    source.value,
                    created_at,
                ),
            )
        assert row is not None
        return ProfileFact(int(row[0]), person, text, tokens, source, created_at)

    async def profile_facts(self, *, person: Person) -> Sequence[ProfileFact]:
        rows = await self._db.execute_fetchall(
            f"SELECT {_FACT_COLUMNS} FROM profile_facts"  # noqa: S608 (constant columns)
            " WHERE platform = ? AND workspace = ? AND user_id = ? ORDER BY id",
            (person.platform, person.workspace, person.user_id),
        )
        return [_fact(row) for row in rows]

    async def remove_profile_facts(self, *, person: Person, fact_id: int | None) -> int:
        where = "platform = ? AND workspace = ? AND user_id = ?"
        params: tuple[Any, ...] = (person.platform, person.workspace, person.user_id)
        async with self._transaction():
            cursor = await self._db.execute(
                f"DELETE FROM profile_facts WHERE {where}"  # noqa: S608 (constant text)
                + (" AND id = ?" if fact_id is not None else ""),
                (*params, fact_id) if fact_id is not None else params,
            )
            removed = cursor.rowcount
            if removed:
                await self._db.execute(
                    "INSERT INTO profile_forgets (platform, workspace, user_id, forgot_at)"
                    " VALUES (?, ?, ?, ?) ON CONFLICT (platform, workspace, user_id)"
                    " DO UPDATE SET forgot_at = excluded.forgot_at",
                    (*params, time.time()),
                )
        return removed

    async def profile_forgot_at(self, *, person: Person) -> float | None:
        rows = await self._db.execute_fetchall(
            "SELECT forgot_at FROM profile_forgets"
            " WHERE platform = ? AND workspace = ? AND user_id = ?",
            (person.platform, person.workspace, person.user_id),
        )
        return next((float(row[0]) for row in rows), None)

    async def latest_summary(self, *, conversation_key: str) -> Summary | None:
        # A summary row never changes once written (but for a recount, which drops what is
        # held); its id and the time it was made tell it from one stored since, by whichever
        # process, even one that took its id after a reset.
        keys = await self._read(_LATEST_SUMMARY_KEY, (conversation_key,))
        held = self._summaries.get(conversation_key)
        if held is not None and keys and (held.id, held.created_at) == tuple(keys[0]):
            return held
        rows = await self._read(_LATEST_SUMMARY, (conversation_key,)) if keys else []
        return self._hold(conversation_key, next((_summary(row) for row in rows), None))

    def _hold(self, conversation_key: str, summary: Summary | None) -> Summary | None:
        """Keep ``summary`` as the conversation's latest (None: it has none)."""
        held = self._summaries
        held.pop(conversation_key, None)
        if summary is not None:
            if len(held) >= _HELD_SUMMARIES:
                held.pop(next(iter(held)))  # the one kept longest ago
            held[conversation_key] = summary
        return summary

    async def save_summary(
        self, summary: NewSummary, *, generation: int, previous_id: int | None
    ) -> Summary | None:
        created_at = time.time()
        async with self._transaction():
            current = await self.generation(conversation_key=summary.conversation_key)
            keys = await self._db.execute_fetchall(_LATEST_SUMMARY_KEY, (summary.conversation_key,))
            if current != generation or next((key[0] for key in keys), None) != previous_id:
                return None
            row = await self._db.execute_insert(
                "INSERT INTO summaries (conversation, content, tokens, covers_through_turn,"
                " message_count, first_message_id, last_message_id, compactions, rebuilt,"
                " model, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    summary.conversation_key,
                    summary.content,
                    summary.tokens,
                    summary.covers_through_turn,
                    summary.message_count,
                    summary.first_message_id,
                    summary.last_message_id,
                    summary.compactions,
                    int(summary.rebuilt),
                    summary.model,
                    created_at,
                ),
            )
        assert row is not None
        saved = Summary(
            id=int(row[0]),
            conversation_key=summary.conversation_key,
            content=summary.content,
            tokens=summary.tokens,
            covers_through_turn=summary.covers_through_turn,
            message_count=summary.message_count,
            first_message_id=summary.first_message_id,
            last_message_id=summary.last_message_id,
            compactions=summary.compactions,
            rebuilt=summary.rebuilt,
            model=summary.model,
            created_at=created_at,
        )
        return self._hold(summary.conversation_key, saved)

    async def reset(self, *, conversation: Conversation, include_pins: bool) -> int:
        key = conversation.key
        async with self._transaction():
            cursor = await self._db.execute("DELETE FROM messages WHERE conversation = ?", (key,))
            deleted = cursor.rowcount
            self._rows.drop(key)
            # The journal's entries for each deleted message, as one for the conversation.
            await self._db.execute("DELETE FROM message_changes WHERE conversation = ?", (key,))
            await self._db.execute(MARK_CONVERSATION, (key,))
            await self._db.execute("DELETE FROM summaries WHERE conversation = ?", (key,))
            # Kept, with its generation moved on (a summary in flight is discarded); never made.
            await self._db.execute(
                "UPDATE conversations SET generation = generation + 1 WHERE key = ?", (key,)
            )
            if include_pins:
                await self._db.execute(
                    "DELETE FROM pins WHERE channel_key = ?", (conversation.channel_key,)
                )
        return deleted

    async def record_usage(
        self,
        *,
        conversation_key: str,
        model: str,
        purpose: str,
        prompt_tokens: int,
        completion_tokens: int,
    ) -> None:
        await self._write(
            "INSERT INTO usage (conversation, model, purpose, requests, prompt_tokens,"
            " completion_tokens) VALUES (?, ?, ?, 1, ?, ?)"
            " ON CONFLICT (conversation, model, purpose) DO UPDATE SET"
            " requests = requests + 1,"
            " prompt_tokens = prompt_tokens + excluded.prompt_tokens,"
            " completion_tokens = completion_tokens + excluded.completion_tokens",
            (conversation_key, model, purpose, prompt_tokens, completion_tokens),
        )

    async def usage(self, *, conversation_key: str) -> Sequence[UsageTotals]:
        rows = await self._db.execute_fetchall(
            "SELECT model, purpose, requests, prompt_tokens, completion_tokens FROM usage"
            " WHERE conversation = ? ORDER BY purpose, model",
            (conversation_key,),
        )
        return [UsageTotals(*row) for row in rows]

    async def calibrations(self) -> Sequence[Calibration]:
        rows = await self._db.execute_fetchall("SELECT model, ratio, samples FROM calibration")
        return [Calibration(*row) for row in rows]

    async def save_calibration(self, calibration: Calibration) -> None:
        await self._write(
            "INSERT INTO calibration (model, ratio, samples, updated_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (model) DO UPDATE SET ratio = excluded.ratio,"
            " samples = excluded.samples, updated_at = excluded.updated_at",
            (calibration.model, calibration.ratio, calibration.samples, time.time()),
        )

    async def conversations(self) -> Sequence[ConversationInfo]:
        rows = await self._db.execute_fetchall(
            "SELECT c.key,"
            " (SELECT COUNT(*) FROM messages m WHERE m.conversation = c.key),"
            " (SELECT COALESCE(SUM(tokens), 0) FROM messages m WHERE m.conversation = c.key),"
            " (SELECT COUNT(*) FROM pins p WHERE p.channel_key = c.channel_key),"
            " (SELECT MAX(created_at) FROM messages m WHERE m.conversation = c.key)"
            " FROM conversations c ORDER BY c.key"
        )
        return [ConversationInfo(*row) for row in rows]

    async def known_keys(self) -> set[str]:
        """Every conversation's key, and the channel of every pin (a channel may hold only
        pins)."""
        rows = await self._db.execute_fetchall(
            "SELECT key FROM conversations UNION SELECT channel_key FROM pins"
        )
        return {str(row[0]) for row in rows}

    async def claim_request(self, request_id: str, *, keep_seconds: float) -> bool:
        now = time.time()
        async with self._transaction():
            await self._db.execute(
                "DELETE FROM handled_requests WHERE handled_at < ?", (now - keep_seconds,)
            )
            cursor = await self._db.execute(
                "INSERT INTO handled_requests (request_id, handled_at) VALUES (?, ?)"
                " ON CONFLICT DO NOTHING",
                (request_id, now),
            )
            claimed = cursor.rowcount > 0
        return claimed

    async def rename_author(
        self, *, conversation_key: str, stored_id: int, author_name: str, tokens: int
    ) -> bool:
        changed = await self._write(
            "UPDATE messages SET author_name = ?, tokens = ? WHERE conversation = ? AND id = ?",
            (author_name, tokens, conversation_key, stored_id),
        )
        self._rows.drop_id(conversation_key, stored_id)
        return changed > 0

    async def get_meta(self, key: str) -> str | None:
        rows = await self._db.execute_fetchall("SELECT value FROM meta WHERE key = ?", (key,))
        return next((str(row[0]) for row in rows), None)

    async def set_meta(self, key: str, value: str) -> None:
        await self._write(
            "INSERT INTO meta (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    async def retokenize(self, count: Callable[[str], int]) -> int:
        """Recount every stored token count (after the chat model's encoding changed)."""
        updated = 0
        self._rows.clear()
        self._turns.clear()
        self._summaries.clear()
        async with self._transaction():
            rows = await self._db.execute_fetchall(
                "SELECT id, role, author_name, content FROM messages"
            )
            await self._db.executemany(
                "UPDATE messages SET tokens = ? WHERE id = ?",
                [(count(render_content(Role(r[1]), r[2], r[3])), r[0]) for r in rows],
            )
            updated += len(list(rows))
            # The journal's entries for each recounted message, as one per conversation.
            await self._db.execute("DELETE FROM message_changes")
            await self._db.execute(
                "INSERT INTO message_changes (conversation) SELECT key FROM conversations"
            )
            for table, column in (
                ("pins", "text"),
                ("summaries", "content"),
                ("profile_facts", "text"),
            ):
                rows = await self._db.execute_fetchall(
                    f"SELECT id, {column} FROM {table}"  # noqa: S608 (constant names)
                )
                await self._db.executemany(
                    f"UPDATE {table} SET tokens = ? WHERE id = ?",  # noqa: S608
                    [(count(r[1]), r[0]) for r in rows],
                )
        return updated

    async def backup(
        self, target: Path, pages: Callable[[int, int], None] = lambda done, total: None
    ) -> None:
        """A consistent copy of the database at ``target``, taken while the bot runs;
        ``pages``: copied and total, after each step."""
        async with self._write_lock:
            await archive.backup(self._db, target, pages)

    async def export_records(self, *, channel_key: str | None) -> list[dict[str, Any]]:
        """One channel's conversations, messages, pins and summaries, and its people's
        profiles (all, when None)."""
        async with self._write_lock:
            return await archive.export_records(self._db, channel_key=channel_key)

    async def export_each(
        self,
        *,
        channel_key: str | None,
        write: Callable[[list[dict[str, Any]]], None],
        sized: Callable[[int], None] = lambda total: None,
    ) -> int:
        """:meth:`export_records` a chunk at a time (``bot export``)."""
        async with self._write_lock:
            return await archive.export_each(
                self._db, channel_key=channel_key, write=write, sized=sized
            )

    async def import_records(
        self,
        records: list[dict[str, Any]],
        advance: Callable[[int], None] = lambda count: None,
    ) -> archive.Imported:
        async with self._write_lock:
            imported = await archive.import_records(self._db, records, advance)
        self._known.clear()
        self._rows.clear()
        self._turns.clear()
        self._summaries.clear()
        return imported

    async def health_problem(self) -> str | None:
        """Why the database is not fit to keep messages right now, or None."""
        if self.write_failure is not None:
            return f"cannot write: {self.write_failure}"
        if not await self.ping():
            return "does not answer"
        return (
            None if self._file_id is None else _file_problem(self.path, self._file_id, self._wal_id)
        )

    async def ping(self) -> bool:
        """Whether the database answers a query."""
        try:
            await self._db.execute_fetchall("SELECT 1 FROM meta LIMIT 1")
        except Exception:
            return False
        return True

    async def synchronous(self) -> str:
        """How the writing connection syncs its commits: ``full``, ``normal`` (or ``off``)."""
        rows = await self._db.execute_fetchall("PRAGMA synchronous")
        return {0: "off", 1: "normal", 2: "full", 3: "extra"}[next(iter(rows))[0]]

    async def integrity_check(self) -> str:
        rows = await self._db.execute_fetchall("PRAGMA quick_check")
        return str(next(iter(rows))[0])

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        await self._db.close()
