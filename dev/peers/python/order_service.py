"""A stand-in for the shop's order service in Python: it starts each order's confirmation mail through
Temporal's Python SDK and the order-confirmation-mail-client package (packages/client-python), the way
docs/workflow-contract.md describes, and deliberately more than once: each
order is started by COPIES concurrent tasks (default 3), as a redelivered event or a retried request would.
One of them starts the workflow; the others must read "already started".

    TEMPORAL_ADDRESS=localhost:7233 TEMPORAL_NAMESPACE=default TEMPORAL_TASK_QUEUE=order-confirmation-mail \\
    python order_service.py [--copies N] ORDER_ID [ORDER_ID ...]

The connection comes from the environment (or a TOML profile) through temporalio.envconfig, the same
variables as the TypeScript client. Prints one JSON object per start attempt:
{"order_id": "123", "copy": 1, "status": "started" | "already-started" | "error", "run_id": ..., "error": ...}
Exits 0 when every attempt started or read already-started, 1 when any failed, 2 for bad arguments (then
nothing is started).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

from order_confirmation_mail_client import (
    InvalidOrderIdError,
    connect_order_mail_client,
    parse_order_id,
    start_order_confirmation_mail,
    task_queue_from_environment,
)
from temporalio.client import Client

# Each start is one RPC; the SDK retries transient errors within this, then the attempt reports an error.
START_TIMEOUT_S = 30


def parse_arguments(argv: list[str]) -> tuple[int, list[str]]:
    parser = argparse.ArgumentParser(description="Start order confirmation mails, each several times at once.")
    parser.add_argument("--copies", type=int, default=3, help="concurrent starts per order (default 3)")
    parser.add_argument("order_ids", nargs="+", metavar="ORDER_ID")
    arguments = parser.parse_args(argv)
    if arguments.copies < 1:
        parser.error("--copies must be at least 1")
    problems: list[str] = []
    order_ids: list[str] = []
    for raw in arguments.order_ids:
        try:
            order_ids.append(parse_order_id(raw))
        except InvalidOrderIdError as error:
            problems.append(str(error))
    # Every id is checked before anything starts, so a typo leaves nothing half done.
    if problems:
        parser.error("nothing started:\n  " + "\n  ".join(problems))
    return arguments.copies, order_ids


async def start_one(client: Client, order_id: str, copy: int, task_queue: str) -> bool:
    record: dict[str, object] = {"order_id": order_id, "copy": copy}
    try:
        result = await asyncio.wait_for(
            start_order_confirmation_mail(client, order_id, task_queue=task_queue), START_TIMEOUT_S
        )
        record.update(status=result.status, run_id=result.run_id)
        ok = True
    except Exception as error:  # reported per attempt; the exit code says that one failed
        record.update(status="error", error=f"{type(error).__name__}: {error}")
        ok = False
    print(json.dumps(record), flush=True)
    return ok


async def run(copies: int, order_ids: list[str]) -> int:
    client = await connect_order_mail_client()
    task_queue = task_queue_from_environment()
    # Every copy of every order at once: the starts of one order race each other on the server.
    results = await asyncio.gather(
        *(
            start_one(client, order_id, copy, task_queue)
            for order_id in order_ids
            for copy in range(1, copies + 1)
        )
    )
    return 0 if all(results) else 1


def main() -> int:
    copies, order_ids = parse_arguments(sys.argv[1:])
    return asyncio.run(run(copies, order_ids))


if __name__ == "__main__":
    code = main()
    # The SDK's Rust client threads can outlive the event loop and abort the interpreter's shutdown now and then
    # ("Fatal Python error: PyGILState_Release", exit by SIGABRT; temporalio/sdk-python issue #300, open):
    # every result is printed by now, so leave without the interpreter's teardown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
