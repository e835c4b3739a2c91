"""The shop's mail worker as the case study runs it today: it takes order ids from a Redis job queue, claims
each in `order_mail_log` with the case study's two statements, sends through `mail_api`, and records `sent` or
`failed` exactly as the case study's `send_order_mail` does. It exists so the tests can run the old system as
real processes beside ours (a cut-over), not as a model of it: keep `send_order_mail` word for word.

    DATABASE_URL=postgres://… REDIS_URL=redis://… MAIL_API_BASE_URL=http://127.0.0.1:4010 \\
    MAIL_API_KEY=sandbox-key python case_study_worker.py

Jobs are JSON objects {"order_id": "123"} pushed with RPUSH onto MAIL_QUEUE. The queue does what the case
study's does: a job whose run raises (a 4xx re-raised by `send_order_mail`, a lost database connection) is
run again, up to JOB_MAX_ATTEMPTS runs, each push carrying its run number. A job taken by a process that dies
is lost, as with a plain Redis list. SIGTERM or SIGINT lets the job in hand finish, then the process exits 0.
Every line it prints is one JSON object saying what happened to which order.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Callable, Mapping

import psycopg
import redis

from mail_api import (
    Mail,
    MailApi,
    MailApiClientError,
    MailApiSettings,
    MailApiTimeout,
)

# --- The case study's code --------------------------------------------------------------------------------
# Statements and branches as the case study writes them; only `mail_api.send` takes the loaded order instead
# of the bare id, because the message needs the customer's address.


def send_order_mail(db: psycopg.Connection, mail_api: MailApi, order_id: int) -> str:
    # 1. claim: PRIMARY KEY 衝突で「誰かが先に取った」ことが分かる
    claimed = (
        db.execute(
            "INSERT INTO order_mail_log (order_id, state, attempts) "
            "VALUES (%s, 'sending', 1) ON CONFLICT (order_id) DO NOTHING",
            (order_id,),
        ).rowcount
        == 1
    )
    if not claimed:
        # failed のものだけ再挑戦できる
        claimed = (
            db.execute(
                "UPDATE order_mail_log SET state='sending', attempts=attempts+1, updated_at=NOW() "
                "WHERE order_id=%s AND state='failed'",
                (order_id,),
            ).rowcount
            == 1
        )
    if not claimed:
        return "skipped"  # sending / sent は触らない

    # 2. send
    try:
        mail_api.send(load_mail(db, order_id))
    except MailApiClientError:  # 4xx: 受理されていないので再送可
        db.execute("UPDATE order_mail_log SET state='failed' WHERE order_id=%s", (order_id,))
        raise
    except MailApiTimeout:  # 受理されたか不明: 再送しない側に倒す
        db.execute("UPDATE order_mail_log SET state='sent' WHERE order_id=%s", (order_id,))
        return "sent-after-timeout"
    db.execute("UPDATE order_mail_log SET state='sent' WHERE order_id=%s", (order_id,))
    return "sent"


# --- What the case study leaves out: the order's address, configuration, the queue ----------------------

SUBJECT = "ご注文ありがとうございます"


class OrderNotFound(Exception):
    pass


def load_mail(db: psycopg.Connection, order_id: int) -> Mail:
    # The columns our service reads too (src/db/orders.ts); an adopter with other names changes this query.
    row = db.execute(
        "SELECT customer_name, customer_email FROM orders WHERE id = %s", (order_id,)
    ).fetchone()
    if row is None:
        raise OrderNotFound(f"order {order_id} does not exist")
    name, email = row
    text = f"{name} 様\n\nご注文ありがとうございます。\nご注文番号: {order_id}\n"
    return Mail(order_id=order_id, to=email, subject=SUBJECT, text=text)


@dataclass(frozen=True)
class WorkerConfig:
    database_url: str
    redis_url: str
    queue: str
    max_job_attempts: int
    statement_timeout_ms: int
    mail: MailApiSettings
    name: str


class ConfigError(Exception):
    pass


def load_config(env: Mapping[str, str]) -> WorkerConfig:
    """Reads every variable and reports all problems at once."""
    problems: list[str] = []

    def required(name: str) -> str:
        value = env.get(name, "").strip()
        if value == "":
            problems.append(f"{name} is required")
        return value

    def positive_int(name: str, default: int) -> int:
        text = env.get(name, "").strip()
        if text == "":
            return default
        if not text.isdigit() or int(text) < 1:
            problems.append(f"{name} must be a positive integer, not {text!r}")
            return default
        return int(text)

    config = WorkerConfig(
        database_url=required("DATABASE_URL"),
        redis_url=env.get("REDIS_URL", "").strip() or "redis://127.0.0.1:6379/0",
        queue=env.get("MAIL_QUEUE", "").strip() or "order_mail_jobs",
        max_job_attempts=positive_int("JOB_MAX_ATTEMPTS", 3),
        statement_timeout_ms=positive_int("PG_STATEMENT_TIMEOUT_MS", 10_000),
        mail=MailApiSettings(
            base_url=required("MAIL_API_BASE_URL"),
            api_key=required("MAIL_API_KEY"),
            from_address=env.get("MAIL_FROM", "").strip() or "shop@example.com",
            connect_timeout_s=positive_int("MAIL_CONNECT_TIMEOUT_MS", 5_000) / 1000,
            response_timeout_s=positive_int("MAIL_HEADERS_TIMEOUT_MS", 30_000) / 1000,
        ),
        name=env.get("WORKER_NAME", "").strip() or f"case-study-worker-{os.getpid()}",
    )
    url = urllib.parse.urlsplit(config.mail.base_url)
    if config.mail.base_url and (url.scheme not in ("http", "https") or not url.hostname):
        problems.append(f"MAIL_API_BASE_URL must be an http(s) URL, not {config.mail.base_url!r}")
    if problems:
        raise ConfigError("Invalid configuration: " + "; ".join(problems) + ".")
    return config


@dataclass(frozen=True)
class Job:
    order_id: int
    attempt: int


def parse_job(raw: bytes) -> Job | None:
    try:
        body = json.loads(raw)
        order_id = int(str(body["order_id"]))
        attempt = int(body.get("attempt", 1))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if order_id < 1 or attempt < 1:
        return None
    return Job(order_id=order_id, attempt=attempt)


def log(worker: str, event: str, **fields: object) -> None:
    print(json.dumps({"worker": worker, "event": event, **fields}, ensure_ascii=False), flush=True)


class Database:
    """One autocommit connection, as the case study's `db.execute` implies; reopened after it was lost."""

    def __init__(self, config: WorkerConfig) -> None:
        self._config = config
        self._connection: psycopg.Connection | None = None

    def get(self) -> psycopg.Connection:
        if self._connection is None or self._connection.closed:
            self._connection = psycopg.connect(
                self._config.database_url,
                autocommit=True,
                connect_timeout=10,
                application_name=self._config.name,
                options=f"-c statement_timeout={self._config.statement_timeout_ms}",
            )
        return self._connection

    def discard(self) -> None:
        if self._connection is not None:
            self._connection.close()
        self._connection = None


def run(config: WorkerConfig, stopping: threading.Event) -> None:
    mail_api = MailApi(config.mail)
    # The name lets a test (or an operator's CLIENT LIST) see which workers sit idle in BLPOP.
    queue = redis.Redis.from_url(
        config.redis_url, socket_connect_timeout=5, socket_timeout=10, client_name=config.name
    )
    database = Database(config)
    log(config.name, "started", queue=config.queue)
    while not stopping.is_set():
        try:
            # A short block, so a stop request is seen within a second.
            item = queue.blpop([config.queue], timeout=1)
        except redis.RedisError as error:
            log(config.name, "queue-unavailable", error=repr(error))
            stopping.wait(1)
            continue
        if item is None:
            continue
        job = parse_job(item[1])
        if job is None:
            log(config.name, "job-invalid", job=item[1].decode("utf-8", "replace")[:200])
            continue
        run_job(config, job, database, mail_api, lambda next_job: push(queue, config.queue, next_job))
    database.discard()
    log(config.name, "stopped")


def run_job(
    config: WorkerConfig,
    job: Job,
    database: Database,
    mail_api: MailApi,
    requeue: Callable[[Job], None],
) -> None:
    started = time.monotonic()
    try:
        result = send_order_mail(database.get(), mail_api, job.order_id)
    except Exception as error:  # the queue's retry covers whatever the job raised
        if isinstance(error, psycopg.OperationalError):
            database.discard()
        again = job.attempt < config.max_job_attempts
        log(
            config.name,
            "job-failed",
            order_id=str(job.order_id),
            attempt=job.attempt,
            error=repr(error)[:300],
            queued_again=again,
        )
        if again:
            try:
                requeue(Job(order_id=job.order_id, attempt=job.attempt + 1))
            except redis.RedisError as queue_error:
                log(config.name, "job-lost", order_id=str(job.order_id), error=repr(queue_error))
        return
    log(
        config.name,
        result,
        order_id=str(job.order_id),
        attempt=job.attempt,
        ms=round((time.monotonic() - started) * 1000),
    )


def push(queue: redis.Redis, name: str, job: Job) -> None:
    queue.rpush(name, json.dumps({"order_id": str(job.order_id), "attempt": job.attempt}))


def main() -> int:
    try:
        config = load_config(os.environ)
    except ConfigError as error:
        print(str(error), file=sys.stderr)
        return 2
    stopping = threading.Event()
    for signal_number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signal_number, lambda *_: stopping.set())
    run(config, stopping)
    return 0


if __name__ == "__main__":
    sys.exit(main())
