"""The HTTP/1.1 connection of `scriptc serve`: uvicorn's httptools protocol, plus what a server that
faces clients it does not control needs and uvicorn leaves out.

- A request's headers must all arrive within header_timeout_s of its first byte (of the connection,
  for the first request) and fit in max_header_bytes: a client that sends them a byte a second, or
  connects and sends nothing, gets 408 and is dropped; oversized headers get 431.
- On shutdown, a keep-alive connection with no request in flight is not closed at once (a request
  the client sends at that moment would meet a reset): it stays open for drain_s, and a request on
  it is answered 503 with `Connection: close` (the app answers every request so while the server
  drains), then it closes.
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .app import ServerConfig

_REASONS = {408: b"Request Timeout", 431: b"Request Header Fields Too Large"}


def protocol_class(config: ServerConfig) -> type:
    """The asyncio protocol uvicorn runs each connection with (uvicorn.Config's `http`)."""

    class ServingProtocol(HttpToolsProtocol):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.awaiting_headers = True   # the next bytes begin a request
            self.header_bytes = 0
            self.header_timer = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._start_header_timer()

        def data_received(self, data: bytes) -> None:
            if self.awaiting_headers:
                if self.header_timer is None:
                    self._start_header_timer()
                end = data.find(b"\r\n\r\n")
                self.header_bytes += len(data) if end < 0 else end
                if self.header_bytes > config.max_header_bytes:
                    self._refuse(431, f"request headers over {config.max_header_bytes} bytes")
                    return
            super().data_received(data)

        def on_headers_complete(self) -> None:
            self.awaiting_headers = False
            self.header_bytes = 0
            self._stop_header_timer()
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self.awaiting_headers = True  # (a pipelined request's headers may follow at once)

        def connection_lost(self, exc) -> None:
            self._stop_header_timer()
            super().connection_lost(exc)

        def shutdown(self) -> None:
            if self.cycle is None or self.cycle.response_complete:
                self.loop.call_later(config.drain_s, self._close_when_done)
            else:
                self.cycle.keep_alive = False

        def _close_when_done(self) -> None:
            if self.cycle is None or self.cycle.response_complete:
                self.transport.close()
            else:
                self.cycle.keep_alive = False

        def _start_header_timer(self) -> None:
            self.header_timer = self.loop.call_later(config.header_timeout_s, self._headers_too_slow)

        def _stop_header_timer(self) -> None:
            if self.header_timer is not None:
                self.header_timer.cancel()
                self.header_timer = None

        def _headers_too_slow(self) -> None:
            self.header_timer = None
            if self.awaiting_headers and (self.cycle is None or self.cycle.response_complete):
                self._refuse(408, f"request headers did not arrive within {config.header_timeout_s} s")

        def _refuse(self, status: int, message: str) -> None:
            self._stop_header_timer()
            if self.transport.is_closing():
                return
            body = message.encode()
            self.transport.write(b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\n"
                                 b"content-length: %d\r\nconnection: close\r\n\r\n%s"
                                 % (status, _REASONS[status], len(body), body))
            self.transport.close()

    return ServingProtocol
