"""uvicorn's HTTP/1.1 protocol, but for a request its parser refuses (a malformed
``Content-Length``, request line or header): the answer is the JSON error object every other
refusal of ``crftag serve`` is, not uvicorn's plain-text 400. The application never sees such a
request, so only the protocol can answer it."""

from __future__ import annotations

try:  # uvicorn's "auto" choice: httptools' parser where it is installed, else h11
    import httptools  # noqa: F401
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _Protocol
except ImportError:
    from uvicorn.protocols.http.h11_impl import H11Protocol as _Protocol

from crftag.serve.app import error_answer

__all__ = ["JsonErrorProtocol", "MALFORMED_REQUEST"]

MALFORMED_REQUEST = (
    "request: not valid HTTP/1.1 (the request line or a header, such as Content-Length, "
    "does not parse)"
)


class JsonErrorProtocol(_Protocol):
    """The protocol uvicorn would choose, answering an unparsable request with JSON."""

    def send_400_response(self, msg: str) -> None:
        status, body, content_type = error_answer(400, MALFORMED_REQUEST)
        head = (
            f"HTTP/1.1 {status} Bad Request\r\ncontent-type: {content_type}\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        self.transport.write(head.encode("latin-1") + body)
        self.transport.close()
