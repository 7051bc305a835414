"""The webhook's serving certificate, followed as its mounted Secret is rotated.

cert-manager renews the certificate in its Secret and the kubelet swaps the mounted
files (a `..data` symlink): the paths stay, the content changes. A webhook that read
them once would present the old certificate until it expired and the API server
stopped calling it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import ssl
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

LOG = logging.getLogger("tailor.admission")


class _Unusable(Exception):
    """Why the files' pair cannot be served; `content` says what was read (logged once)."""

    def __init__(self, message: str, content: str) -> None:
        super().__init__(message)
        self.content = content


class CertificateReloader:
    """The PEM pair the server presents (`pem`) and the files it follows; see `check()`.

    A new pair is checked by loading it into a scratch OpenSSL context before it is
    served; the server (`admission.edge`) hears of each through `renewed` and makes its
    new connections with it, while open connections keep theirs.
    """

    def __init__(self, cert_file: Path, key_file: Path) -> None:
        """Load the pair; ssl.SSLError / OSError when unusable (refused at start, not served)."""
        self.cert_file, self.key_file = cert_file, key_file
        cert_pem, key_pem = cert_file.read_bytes(), key_file.read_bytes()
        with staged(cert_pem, key_pem) as (cert_path, key_path):
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert_path, key_path)
        self.pem = (cert_pem, key_pem)
        self.renewed: list[Callable[[], None]] = []  # called with each new pair served
        self._served = _digest(cert_pem, key_pem)
        self._reported: str | None = None  # the unusable content already logged
        self.error: str | None = None  # what is wrong with the files, while it is

    def check(self) -> bool:
        """Serve the files' pair if it changed and loads; True when it switched.

        An unusable pair (half-written, a key of another certificate, a missing file)
        leaves the served one in place and is logged once per content; the next check
        tries again. Never raises for what is in the files.
        """
        try:
            cert_pem, key_pem = _read(self.cert_file), _read(self.key_file)
            content = _digest(cert_pem, key_pem)
            switched = content != self._served
            if switched:
                self._load(cert_pem, key_pem, content)
                self._switch((cert_pem, key_pem), content)
        except _Unusable as problem:
            self.error = str(problem)
            if problem.content != self._reported:
                LOG.error("%s; still serving the previous certificate", problem)
                self._reported = problem.content
            return False
        self.error, self._reported = None, None
        if switched:
            LOG.info("serving the renewed certificate from %s", self.cert_file)
        return switched

    def _switch(self, pem: tuple[bytes, bytes], content: str) -> None:
        """Hand the checked pair to the listeners; `_Unusable` when one fails, the old pair
        still served. `_served` moves only once all have switched, so the next check tries
        again. A listener that cannot keep the old pair served ends the process itself
        (`admission.edge` does): it never returns or raises with nothing served."""
        previous, self.pem = self.pem, pem
        try:
            for listener in list(self.renewed):
                listener()
        except Exception as error:
            self.pem = previous
            message = f"the renewed certificate from {self.cert_file} could not be served"
            raise _Unusable(f"{message}: {error!r}", content) from error
        self._served = content

    def _load(self, cert_pem: bytes, key_pem: bytes, content: str) -> None:
        try:
            with staged(cert_pem, key_pem) as (cert_path, key_path):
                try:
                    ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert_path, key_path)
                except ssl.SSLError as error:
                    raise _Unusable(self._blame(cert_pem, error), content) from error
        except OSError as error:  # staging the copies failed
            message = f"cannot load {self.cert_file} and {self.key_file}: {error}"
            raise _Unusable(message, content) from error

    def _blame(self, cert_pem: bytes, error: ssl.SSLError) -> str:
        """Name the file at fault: OpenSSL's "PEM lib" does not say which one it was reading."""
        try:
            text = cert_pem.decode("ascii")
            ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=text)
        except (ssl.SSLError, ValueError):  # not PEM, no certificate, cut short
            return f"{self.cert_file} holds no readable PEM certificate"
        if error.reason == "KEY_VALUES_MISMATCH":
            return f"{self.key_file} is not the key of the certificate in {self.cert_file}"
        return f"{self.key_file} holds no readable PEM private key ({error})"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        message = f"cannot read {path}: {error.strerror or error}"
        raise _Unusable(message, f"{path}: errno {error.errno}") from error


def _digest(cert_pem: bytes, key_pem: bytes) -> str:
    return hashlib.sha256(cert_pem).hexdigest() + hashlib.sha256(key_pem).hexdigest()


@contextlib.contextmanager
def staged(cert_pem: bytes, key_pem: bytes) -> Iterator[tuple[str, str]]:
    """Private copies of the two PEMs, for OpenSSL and rustls, which only take paths.

    Both the check and the server read these bytes, never the mount, so what was checked
    is what gets served even if the Secret changes again in between. In memory (memfd) where the
    platform has it: a pod's root filesystem is often read-only.
    """
    with contextlib.ExitStack() as stack:
        cert_path = _private_file(stack, "tls.crt", cert_pem)
        yield cert_path, _private_file(stack, "tls.key", key_pem)


def _private_file(stack: contextlib.ExitStack, name: str, data: bytes) -> str:
    if hasattr(os, "memfd_create"):
        descriptor = os.memfd_create(name, os.MFD_CLOEXEC)
        stack.callback(os.close, descriptor)
        with open(descriptor, "wb", closefd=False) as sink:
            sink.write(data)
        return f"/proc/self/fd/{descriptor}"
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tailor-tls-")))
    (folder / name).write_bytes(data)
    return str(folder / name)
