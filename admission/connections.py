"""What a connection may cost the webhook, and which part of the server enforces each limit.

HTTP/1.1 and TLS are granian's (hyper and rustls, in Rust: `admission.edge`); the limits
map onto it as follows.

- **Headers**: a request's headers must be in within `header_seconds` of the connection
  waiting for them (hyper's `header_read_timeout`), or the connection is closed.
- **Idle keep-alive**: the same timer. hyper starts it whenever a connection waits for
  a request's head, so a kept-alive connection idle for `header_seconds` is closed too:
  there is no separate idle deadline. Hence 60 s, not a few: the API server keeps idle
  connections ~90 s, and when our close crosses its next POST on the wire, Go's client
  does not retry it (a POST is not replayable), so with failurePolicy Ignore that pod is
  admitted unsized. The longer the idle deadline, the rarer the crossing: at 60 s a
  connection must sit unused a whole minute first. The price is small: a client slow to
  send its headers holds a socket and some Rust memory for up to 60 s, never a Python
  object, a turn of the event loop or a backpressure turn.
- **Body**: `body_seconds` from the headers to the last byte of the body, enforced by
  the handler (`admission.server`): granian has no body deadline. A large body's wait
  for its turn to be read (`max_large_bodies`) counts against it. A late body is
  answered 408 and its connection closed (`body_timeout` in the metric).
- **Requests under way**: at most `backpressure` per worker (granian's backpressure);
  the next request waits in its socket until one ends.
- **TLS handshake**: 10 s, granian's own and fixed (2.8.7 has no option for it): a
  connection that never completes its TLS hello is closed then. Until then it costs a
  socket and a few KiB of Rust memory, no Python object and no turn of the event loop,
  and does not count against `backpressure`, so it delays no review.
- **Open connections**: granian has no cap. The bound is the process's file descriptors
  (the kernel refuses connections past it).

The closes made inside granian (headers, idle) are not counted by the metric: granian
does not tell the application about them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConnectionLimits:
    """Deadlines in seconds for a request's headers (and an idle connection) and its body,
    and how many requests one worker takes on at once."""

    header_seconds: float = 60.0
    body_seconds: float = 10.0
    backpressure: int = 256
