"""Starting an order's confirmation mail from Python, by the workflow's contract (docs/workflow-contract.md):
the same start, with the same guarantees, as `startOrderConfirmationMail` in the TypeScript client.

    client = await connect_order_mail_client()  # TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TLS, a TOML profile
    result = await start_order_confirmation_mail(client, "123")
    # StartResult(order_id="123", status="started" | "already-started", run_id=...)

Call it as often as you like for an order (after each commit, on every redelivered event, from several
processes at once): exactly one call starts the workflow; the others read "already started" and send nothing.
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass

from temporalio.client import Client, WorkflowExecutionDescription
from temporalio.common import (
    SearchAttributeKey,
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.envconfig import ClientConfig
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

# The contract. Each value must match the TypeScript client (src/shared/workflowContract.ts); a test checks.
WORKFLOW_TYPE = "orderConfirmationMail"
DEFAULT_TASK_QUEUE = "order-confirmation-mail"
# A closed run is not started again (an operator's reset is how a mail is sent again), and an open one is
# not replaced or joined: a second start fails, and that failure is how a caller learns "already started".
ID_REUSE_POLICY = WorkflowIDReusePolicy.REJECT_DUPLICATE
ID_CONFLICT_POLICY = WorkflowIDConflictPolicy.FAIL
# The state of the run's first claim, free as part of the start (the workflow would upsert it otherwise).
ATTRIBUTES_AT_START = TypedSearchAttributes(
    [
        SearchAttributePair(SearchAttributeKey.for_keyword("OrderMailState"), "sending"),
        SearchAttributePair(SearchAttributeKey.for_int("OrderMailAttempts"), 1),
    ]
)
CONNECT_TIMEOUT_S = 10

_ORDER_ID = re.compile(r"^[1-9][0-9]{0,18}$")
_MAX_BIGINT = 9223372036854775807


class InvalidOrderIdError(ValueError):
    pass


class DependencyUnreachableError(ConnectionError):
    """Temporal did not answer: the message names the address and the setting it came from."""


class WorkflowIdHeldError(Exception):
    """The order's workflow id is held by a workflow that is not the order's mail: nothing was started."""

    def __init__(self, order_id: str, workflow_type: str, run_id: str, status: str) -> None:
        super().__init__(
            f"Order {order_id}: its confirmation mail was NOT started. The workflow id {order_id!r} is held by "
            f"a workflow of type {workflow_type!r} (run {run_id}, {status}), not {WORKFLOW_TYPE!r}. Give that "
            "workflow another id or run it in another namespace; until then this order gets no mail."
        )
        self.order_id = order_id
        self.workflow_type = workflow_type
        self.run_id = run_id
        self.status = status


def parse_order_id(value: object) -> str:
    """The canonical decimal string of a Postgres BIGINT order id (the workflow id and the input)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InvalidOrderIdError(f"Invalid order id {value!r}: it must be a string or an integer.")
    text = str(value).strip()
    if not _ORDER_ID.match(text) or int(text) > _MAX_BIGINT:
        raise InvalidOrderIdError(
            f"Invalid order id {str(value)[:40]!r}: it must be a positive integer without sign, spaces or "
            f"leading zeros, at most {_MAX_BIGINT}."
        )
    return text


@dataclass(frozen=True)
class StartResult:
    order_id: str
    status: str  # "started" or "already-started"
    run_id: str | None
    # With "already-started": the run's status, "RUNNING" or a closed one ("COMPLETED", "FAILED",
    # "TERMINATED", ...). A closed run may have closed before its first claim; the reconciliation sweep,
    # which sees the log, starts such an order again (docs/workflow-contract.md).
    run_status: str | None = None


async def connect_order_mail_client() -> Client:
    """Connects as the environment says, through temporalio.envconfig (the TypeScript client's variables)."""
    config = ClientConfig.load_client_connect_config()
    address = config.get("target_host") or "localhost:7233"
    setting = (
        "TEMPORAL_ADDRESS" if os.environ.get("TEMPORAL_ADDRESS", "").strip() else "TEMPORAL_ADDRESS is not set"
    )
    config["target_host"] = address
    try:
        return await asyncio.wait_for(Client.connect(**config), CONNECT_TIMEOUT_S)
    except (RuntimeError, RPCError, TimeoutError, OSError) as error:
        raise DependencyUnreachableError(f"Cannot reach Temporal at {address} ({setting}): {error}") from error


def task_queue_from_environment() -> str:
    return os.environ.get("TEMPORAL_TASK_QUEUE", "").strip() or DEFAULT_TASK_QUEUE


async def start_order_confirmation_mail(
    client: Client, order_id_input: object, *, task_queue: str | None = None
) -> StartResult:
    order_id = parse_order_id(order_id_input)
    # Twice at most: the run that held the id may vanish (past retention) between the refused start and the
    # look at it, and the id is then free.
    for attempt in (1, 2):
        try:
            handle = await client.start_workflow(
                WORKFLOW_TYPE,
                # One argument, the id as a JSON string: a JSON number loses digits above 2^53 in the worker.
                order_id,
                id=order_id,
                task_queue=task_queue or task_queue_from_environment(),
                id_reuse_policy=ID_REUSE_POLICY,
                id_conflict_policy=ID_CONFLICT_POLICY,
                search_attributes=ATTRIBUTES_AT_START,
            )
            return StartResult(order_id=order_id, status="started", run_id=handle.first_execution_run_id)
        except WorkflowAlreadyStartedError as error:
            # The error names the type this call asked for, not the type of what holds the id: ask the server.
            holder = await describe_order_confirmation_mail(client, order_id, run_id=error.run_id)
            if holder is None and attempt == 1:
                continue
            if holder is None:
                raise
            if holder.workflow_type != WORKFLOW_TYPE:
                status = holder.status.name if holder.status is not None else "UNKNOWN"
                raise WorkflowIdHeldError(order_id, holder.workflow_type, holder.run_id, status) from error
            run_status = holder.status.name if holder.status is not None else "UNKNOWN"
            return StartResult(
                order_id=order_id, status="already-started", run_id=holder.run_id, run_status=run_status
            )
    raise AssertionError("unreachable")


async def describe_order_confirmation_mail(
    client: Client, order_id_input: object, *, run_id: str | None = None
) -> WorkflowExecutionDescription | None:
    """The order's mail workflow as Temporal sees it, or None (never started, or past retention)."""
    order_id = parse_order_id(order_id_input)
    try:
        return await client.get_workflow_handle(order_id, run_id=run_id).describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return None
        raise


__all__ = [
    "ATTRIBUTES_AT_START",
    "DEFAULT_TASK_QUEUE",
    "DependencyUnreachableError",
    "ID_CONFLICT_POLICY",
    "ID_REUSE_POLICY",
    "InvalidOrderIdError",
    "StartResult",
    "WORKFLOW_TYPE",
    "WorkflowIdHeldError",
    "connect_order_mail_client",
    "describe_order_confirmation_mail",
    "parse_order_id",
    "start_order_confirmation_mail",
    "task_queue_from_environment",
]
