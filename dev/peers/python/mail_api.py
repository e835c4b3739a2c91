"""The case study's `mail_api`: one HTTP request to the mail SaaS per call, and the two exceptions its
worker catches. It speaks the sandbox's generic API (POST {base}/v1/messages, bearer key, 202 {"id"}) with the
same body our TypeScript transport sends (src/mail/providers/generic.ts), so the sandbox counts its messages
by the same metadata.order_id.

What the case study names, and what it leaves to its client library:
- MailApiClientError: the API answered 4xx. Not accepted; the worker records `failed`.
- MailApiTimeout: the request was sent and no answer came (read timeout, or the connection closed before a
  status line: the "accepted, then cut off" case). Maybe accepted; the worker records `sent`.
- Anything else (MailApiServerError for other statuses, MailApiUnavailable when no connection was made) is
  not caught by the case study's code, so it leaves the row `sending`. That is the old system's behaviour,
  kept on purpose: the rows it leaves are what an adoption has to settle.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
from dataclasses import dataclass


class MailApiError(Exception):
    """Base of every failure of a send."""


class MailApiClientError(MailApiError):
    """The API answered 4xx: the message was not accepted."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"mail API answered {status}: {detail}")
        self.status = status


class MailApiTimeout(MailApiError):
    """The request left this process and no status came back: the API may have accepted it."""


class MailApiServerError(MailApiError):
    """The API answered something other than 2xx or 4xx (a 5xx, a redirect)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"mail API answered {status}: {detail}")
        self.status = status


class MailApiUnavailable(MailApiError):
    """No connection could be made, so nothing was sent."""


@dataclass(frozen=True)
class Mail:
    order_id: int
    to: str
    subject: str
    text: str


@dataclass(frozen=True)
class MailApiSettings:
    base_url: str
    api_key: str
    from_address: str
    connect_timeout_s: float
    # Every wait for the API after the connection is made (writing the request, the status line, the body).
    response_timeout_s: float


# Error bodies can be large or hold what was sent; a log needs only their beginning.
MAX_DETAIL = 200


class MailApi:
    def __init__(self, settings: MailApiSettings) -> None:
        url = urllib.parse.urlsplit(settings.base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"MAIL_API_BASE_URL must be an http(s) URL, not {settings.base_url!r}")
        self._settings = settings
        self._https = url.scheme == "https"
        self._host = url.hostname
        self._port = url.port or (443 if self._https else 80)
        self._path = url.path.rstrip("/") + "/v1/messages"

    def send(self, mail: Mail) -> str:
        """Sends one message; returns the API's message id. Raises one of the MailApiError subclasses."""
        settings = self._settings
        body = json.dumps(
            {
                "from": settings.from_address,
                "to": mail.to,
                "reply_to": None,
                "subject": mail.subject,
                "text": mail.text,
                "html": None,
                # The sandbox (and an adopter's gateway) attributes a message to its order by this.
                "metadata": {"order_id": str(mail.order_id)},
            },
            ensure_ascii=False,
        ).encode("utf-8")
        connection_class = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        connection = connection_class(self._host, self._port, timeout=settings.connect_timeout_s)
        try:
            try:
                connection.connect()
            except OSError as error:
                raise MailApiUnavailable(f"could not connect to the mail API: {error!r}") from error
            assert connection.sock is not None
            connection.sock.settimeout(settings.response_timeout_s)
            try:
                connection.request(
                    "POST",
                    self._path,
                    body=body,
                    headers={
                        "authorization": f"Bearer {settings.api_key}",
                        "content-type": "application/json",
                        "accept": "application/json",
                        "connection": "close",
                    },
                )
                response = connection.getresponse()
            except (OSError, http.client.HTTPException) as error:
                # socket.timeout is an OSError; RemoteDisconnected is both.
                raise MailApiTimeout(f"no answer from the mail API after the request: {error!r}") from error
            status = response.status
            try:
                payload = response.read().decode("utf-8", "replace")
            except (OSError, http.client.HTTPException):
                # The status is in: a body cut off afterwards does not change what the API decided.
                payload = ""
        finally:
            connection.close()
        if 200 <= status < 300:
            return _message_id(payload)
        if 400 <= status < 500:
            raise MailApiClientError(status, payload[:MAX_DETAIL])
        raise MailApiServerError(status, payload[:MAX_DETAIL])


def _message_id(payload: str) -> str:
    try:
        parsed = json.loads(payload)
    except ValueError:
        return ""
    message_id = parsed.get("id") if isinstance(parsed, dict) else None
    return message_id if isinstance(message_id, str) else ""


__all__ = [
    "Mail",
    "MailApi",
    "MailApiClientError",
    "MailApiError",
    "MailApiServerError",
    "MailApiSettings",
    "MailApiTimeout",
    "MailApiUnavailable",
]
