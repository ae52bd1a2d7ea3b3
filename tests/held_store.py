"""An object-store endpoint that takes connections and never answers: a store a read must give up on.

Not a closed port: pyarrow's S3 client retries a refused connection for 85 s, and a read abandoned in a process
(the pytest worker's, the api-server's) keeps retrying there, and pyarrow's S3 finalizer holds that process's
exit until it ends. Here every request waits until ``release`` (the test's end), then gets a 403 Access Denied,
which the client does not retry: nothing is left in flight."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

DENIED = (b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>AccessDenied</Code><Message>Access Denied</Message>"
          b"</Error>")


@contextmanager
def held_endpoint() -> Iterator[str]:
    """``http://127.0.0.1:PORT``, held for the ``with`` block; every request then answered (403) and the server
    kept until the requests it held are answered."""
    release = threading.Event()

    class Held(BaseHTTPRequestHandler):
        def _hold(self) -> None:
            release.wait(120)
            self.send_response(403)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(DENIED)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(DENIED)

        do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _hold

        def log_message(self, *args) -> None:  # a line per request: not this test's business
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Held)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="held-store", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        release.set()
        closer = threading.Timer(5, server.shutdown)  # the held requests answered first; new ones get 403 at once
        closer.daemon = True
        closer.start()
