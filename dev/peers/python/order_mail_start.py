"""Starting an order's confirmation mail from Python, by the workflow's contract (docs/workflow-contract.md):
the same start, with the same guarantees, as `startOrderConfirmationMail` in src/client.ts.

    client = await Client.connect(**ClientConfig.load_client_connect_config())
    result = await start_order_confirmation_mail(client, "123", task_queue="order-confirmation-mail")
    # StartResult(order_id="123", status="started" | "already-started", run_id=...)

Call it as often as you like for an order (after each commit, on every redelivered event, from several
processes at once): exactly one call starts the workflow; the others read "already started" and send nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

# The contract. Each value must match the TypeScript service; docs/workflow-contract.md says why.
WORKFLOW_TYPE = "orderConfirmationMail"
DEFAULT_TASK_QUEUE = "order-confirmation-mail"
# A closed run is not started again (an operator's reset is how a mail is sent again), and an open one is
# not replaced or joined: a second start fails, and that failure is how a caller learns "already started".
ID_REUSE_POLICY = WorkflowIDReusePolicy.REJECT_DUPLICATE
ID_CONFLICT_POLICY = WorkflowIDConflictPolicy.FAIL

_ORDER_ID = re.compile(r"^[1-9][0-9]{0,18}$")
_MAX_BIGINT = 9223372036854775807


class InvalidOrderIdError(ValueError):
    pass


class WorkflowIdHeldError(Exception):
    """The order's workflow id is held by a workflow that is not the order's mail: nothing was started."""

    def __init__(self, order_id: str, workflow_type: str, run_id: str, status: str) -> None:
        super().__init__(
            f"Workflow id {order_id} is held by a workflow of type {workflow_type!r} (run {run_id}, {status}), "
            f"not {WORKFLOW_TYPE!r}: order {order_id}'s confirmation mail was not started. Workflow ids of "
            "this namespace are order ids; whatever started that workflow must use other ids."
        )
        self.order_id = order_id
        self.workflow_type = workflow_type
        self.run_id = run_id


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


async def start_order_confirmation_mail(
    client: Client, order_id_input: object, *, task_queue: str = DEFAULT_TASK_QUEUE
) -> StartResult:
    order_id = parse_order_id(order_id_input)
    try:
        handle = await client.start_workflow(
            WORKFLOW_TYPE,
            # One argument, the id as a JSON string: a JSON number loses digits above 2^53 in the worker.
            order_id,
            id=order_id,
            task_queue=task_queue,
            id_reuse_policy=ID_REUSE_POLICY,
            id_conflict_policy=ID_CONFLICT_POLICY,
            # No search attributes: the workflow sets its own (OrderMailState and the rest) as its row changes.
        )
        return StartResult(order_id=order_id, status="started", run_id=handle.first_execution_run_id)
    except WorkflowAlreadyStartedError as error:
        # The error names the type this call asked for, not the type of what holds the id: ask the server.
        # error.run_id is the run that holds it (open, or closed within the namespace's retention).
        description = await client.get_workflow_handle(order_id, run_id=error.run_id).describe()
        if description.workflow_type != WORKFLOW_TYPE:
            status = description.status.name if description.status is not None else "UNKNOWN"
            raise WorkflowIdHeldError(order_id, description.workflow_type, description.run_id, status) from error
        return StartResult(order_id=order_id, status="already-started", run_id=description.run_id)


__all__ = [
    "DEFAULT_TASK_QUEUE",
    "ID_CONFLICT_POLICY",
    "ID_REUSE_POLICY",
    "InvalidOrderIdError",
    "StartResult",
    "WORKFLOW_TYPE",
    "WorkflowIdHeldError",
    "parse_order_id",
    "start_order_confirmation_mail",
]
