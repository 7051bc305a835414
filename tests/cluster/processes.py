"""Start and stop the control-plane processes by PID, with one log file each.

Fixtures must stop exactly what they started, even when a test fails or the
test run itself dies, so every process is tracked by PID, stopped with
SIGTERM then SIGKILL, and (for test runs) tied to its parent with
PR_SET_PDEATHSIG (SIGKILL) so a killed pytest leaves no API server behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

_PR_SET_PDEATHSIG = 1
# How long a test may wait for a `tailor_process` service to do its first thing: its
# start (imports, the first pass) can take tens of seconds on a machine that runs several
# suites at once. A bound, not a wait: the tests poll and go on as soon as it happens.
SERVICE_BOUND = 90.0


class ProcessStartError(RuntimeError):
    """A process exited or never became ready; the message carries its log tail."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGKILL it when the parent thread exits."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def log_tail(path: Path, lines: int = 30) -> str:
    """The last lines of a log file, for error messages."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def pid_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def pid_command(pid: int) -> str:
    """The executable path of `pid` (empty when gone), to avoid killing a reused PID."""
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def stop_pid(pid: int, grace_seconds: float = 10.0) -> None:
    """SIGTERM `pid`, wait up to `grace_seconds`, then SIGKILL it."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@dataclass
class ManagedProcess:
    """One child process with its own log file; `stop()` ends exactly this PID."""

    name: str
    argv: Sequence[str]
    log_file: Path
    popen: subprocess.Popen[bytes] | None = None

    def start(self, *, tie_to_parent: bool = True, env: dict[str, str] | None = None) -> None:
        """Start detached from our terminal (own session); log stdout+stderr to `log_file`.

        tie_to_parent=False leaves the process running after we exit (cluster-up).
        """
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        argv = list(self.argv)
        preexec = None
        if tie_to_parent:
            # setpriv (util-linux) sets the death signal and execs: same PID, and no
            # Python code runs between fork and exec (unsafe with threads around).
            setpriv = shutil.which("setpriv")
            if setpriv:
                argv = [setpriv, "--pdeathsig", "KILL", "--", *argv]
            else:
                preexec = _die_with_parent
        with self.log_file.open("ab") as log:
            self.popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=preexec,
                env=env,
            )

    @property
    def pid(self) -> int:
        if self.popen is None:
            raise RuntimeError(f"{self.name} was not started")
        return self.popen.pid

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, grace_seconds: float = 10.0) -> None:
        """Stop this process (SIGTERM, then SIGKILL) and reap it."""
        if self.popen is None or self.popen.poll() is not None:
            return
        self.popen.terminate()
        try:
            self.popen.wait(grace_seconds)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(5)

    def failure(self, what: str) -> ProcessStartError:
        """An error naming this process, its exit code and its log tail."""
        code = self.popen.poll() if self.popen else None
        state = f"exited with {code}" if code is not None else "still running"
        return ProcessStartError(
            f"{self.name} {what} ({state}); log {self.log_file}:\n{log_tail(self.log_file)}"
        )

    def wait_ready(self, probe: Callable[[], bool], timeout: float) -> float:
        """Poll `probe` until it is true; fail early if the process dies. Returns seconds."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            if not self.running():
                raise self.failure("exited before it was ready")
            with contextlib.suppress(Exception):
                if probe():
                    return time.monotonic() - start
            time.sleep(0.1)
        raise self.failure(f"not ready after {timeout:.0f}s")


@dataclass
class TailorProcess:
    """A `tailor` command running as its own process; `code` is set once it has stopped."""

    process: subprocess.Popen[bytes]
    log: Path
    code: int | None = None

    def output(self) -> str:
        return self.log.read_text()


@contextlib.contextmanager
def tailor_process(args: Sequence[str], log: Path) -> Iterator[TailorProcess]:
    """Run `tailor ARGS` from this checkout, output to `log`; stopped with SIGTERM on exit,
    as the kubelet stops a pod (a service must then exit 0)."""
    command = [sys.executable, "-m", "tailor.cli.main", *args]
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with log.open("w") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=environment)
        running = TailorProcess(process, log)
        try:
            yield running
        finally:
            process.send_signal(signal.SIGTERM)
            running.code = process.wait(timeout=20)


def http_get(url: str) -> tuple[int, str]:
    """(status, body) of a GET to a service's plain-HTTP endpoint: an error status with
    its body, (0, "") while nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except OSError:
        return 0, ""
