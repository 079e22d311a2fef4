"""``ray``: workers as Ray tasks, each with ``gpus_per_task`` GPUs (``num_gpus``).

Connects to the cluster at ``ray_address`` (``auto``, ``HOST:PORT`` or
``ray://HOST:PORT``), or starts a Ray instance of its own on this machine (never
joining, unasked, a cluster that ``RAY_ADDRESS`` or an earlier ``ray start``
names: without ``ray_address`` the workers run here). Each of the
``workers`` tasks runs :func:`ood_store._evaluate.worker.work` and evaluates
units until none is left; a task is not retried when its worker dies (the
unit it held is evaluated by the next submission). ``detach`` starts the
workers as detached actors on an existing cluster, which outlive the driver.
Needs the ``ray`` extra.

Token authentication: a head started with ``RAY_AUTH_MODE=token`` (or by
``ray start --head`` where ``~/.ray/auth_token`` exists) refuses a driver
without its token, and Ray sends the token to an address given explicitly
only when ``RAY_AUTH_MODE=token`` is set here. Ray itself then retries for
half a minute, with a warning a second; :meth:`RayExecutor.preflight` asks
the head once (its GCS client, which answers a refused token at once) and
stops with one line saying what to set. Whatever Ray writes to standard
output and error while connecting goes to a file that is then removed
(its errors come back as exceptions), so ``-q`` is quiet.
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ood_store._counts import n
from ood_store._errors import InputError, first_line
from ood_store._evaluate.executors import WORKER, ExecutorSettings, JobEnd, require_extra, worker_function
from ood_store._evaluate.harness import output_to
from ood_store._evaluate.workdir import WorkDir


class RayExecutor:
    def __init__(self, settings: ExecutorSettings):
        self.settings = settings
        self.ray = require_extra("ray", "ray", "ray")
        self._started = False

    def preflight(self) -> None:
        """A cluster address must answer, and its head accept this machine's token where it asks for one:
        each checked in a second, before anything is planned (Ray itself retries for half a minute)."""
        address = self.settings.ray_address
        if address and address != "auto":
            _reachable(address)
            if not address.startswith("ray://"):  # Ray Client's server: its refusal comes from ray.init
                _token_accepted(address)

    def check(self) -> None:
        """Connect (or start a local Ray), quietly: Ray's own lines go to a file, its refusal is one line."""
        address = self.settings.ray_address
        if self.ray.is_initialized():
            return
        os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "error")  # Ray's C++ core: retries and warnings off the terminal
        kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
        if address:
            kwargs["address"] = address
        else:  # "local": a new instance, even where RAY_ADDRESS or `ray start` names a cluster
            kwargs.update(address="local", include_dashboard=False)
        from ray.exceptions import AuthenticationError

        mode = os.environ.get("RAY_AUTH_MODE")
        try:
            with _quiet():  # Ray's C++ core says on standard error how it read RAY_BACKEND_LOG_LEVEL, and more
                self.ray.init(**kwargs)
        except AuthenticationError:
            raise InputError(None, None, _refused(address or "local"), parameter="ray_address") from None
        except (ConnectionError, RuntimeError, ValueError) as exc:
            what = f"connect to a Ray cluster at {address}" if address else "start Ray on this machine"
            raise InputError(None, None, f"cannot {what}: {first_line(exc)}", parameter="ray_address") from None
        self._started = not address
        if self._started and mode is None:  # Ray turned token auth on for its own instance by setting this
            os.environ.pop("RAY_AUTH_MODE", None)  # for the whole process: this process's later calls decide anew

    def workers(self) -> tuple[int, float]:
        """How many workers, and GPUs each: by default one per GPU of the cluster, or one on CPUs."""
        gpus = float(self.ray.cluster_resources().get("GPU", 0))
        per = self.settings.gpus_per_task if self.settings.gpus_per_task is not None else (1.0 if gpus else 0.0)
        workers = self.settings.workers or (max(1, int(gpus // per)) if gpus and per else 1)
        return workers, per

    def submit(self, work: WorkDir, attempt: str, units: int, detach: bool, worker: str = WORKER) -> RayJobs:
        if detach and self._started:
            raise InputError(
                None, None, "a Ray instance started here ends with this process: give a cluster to detach from",
                parameter="ray_address",
            )  # fmt: skip
        workers, per = self.workers()
        workers = min(workers, max(1, units))
        if detach:  # actors the cluster keeps (and starts when it has room) after this process has gone
            actor = self.ray.remote(num_gpus=per, num_cpus=1, max_restarts=0)(DetachedWorker)
            for index in range(workers):
                name = f"ood-store-{attempt}-{index}"
                actor.options(lifetime="detached", name=name, namespace="ood-store").remote(
                    str(work.path), attempt, worker
                )
            refs: list[Any] = []
        else:
            task = self.ray.remote(num_gpus=per, num_cpus=1, max_retries=0)(worker_function(worker))
            refs = [task.remote(str(work.path), attempt) for _ in range(workers)]
        gpus = f", {per:g} GPU{'' if per == 1 else 's'} each" if per else ""
        where = self.settings.ray_address or "a Ray instance on this machine"
        description = f"{n(workers, 'Ray worker')} on {where}{gpus}"
        return RayJobs(self.ray, refs, description, shutdown=self._started)


class DetachedWorker:
    """A Ray actor that evaluates units in a thread of its own and then ends its process (``detach``)."""

    def __init__(self, work_dir: str, attempt: str, worker: str = WORKER):
        work = worker_function(worker)

        def run() -> None:
            try:
                work(work_dir, attempt)
            finally:
                os._exit(0)  # the actor's process ends with its work: nothing waits for it

        threading.Thread(target=run, name="ood-store-worker", daemon=False).start()


class RayJobs:
    def __init__(self, ray: Any, refs: list[Any], description: str, shutdown: bool):
        self.ray, self.refs, self.description, self._shutdown = ray, refs, description, shutdown

    def finished(self) -> bool:
        ready, _ = self.ray.wait(self.refs, num_returns=len(self.refs), timeout=0)
        return len(ready) == len(self.refs)

    def ended(self) -> dict[str, JobEnd]:
        return {}

    def cancel(self) -> None:
        for ref in self.refs:
            self.ray.cancel(ref, force=True)

    def errors(self) -> list[str]:
        ready, _ = self.ray.wait(self.refs, num_returns=len(self.refs), timeout=0)
        out = []
        for ref in ready:
            try:
                self.ray.get(ref, timeout=0)
            except Exception as exc:
                lines = [line for line in str(exc).strip().splitlines() if line.strip()]
                out.append(f"Ray worker: {lines[-1] if lines else type(exc).__name__}")
        return out

    def close(self) -> None:
        if self._shutdown:
            self.ray.shutdown()


@contextmanager
def _quiet() -> Iterator[None]:
    """Standard output and error (file descriptors 1 and 2, which Ray's C++ core writes to) into a file
    that is then removed: what Ray says while it connects; its errors come back as exceptions."""
    with tempfile.TemporaryDirectory(prefix="ood-store-ray-") as folder, output_to(Path(folder) / "ray.log"):
        yield


def _token_accepted(address: str) -> None:
    """Stop with one line when the Ray head at ``address`` refuses this machine's token (or its lack of one)."""
    try:
        from ray._raylet import GcsClient  # type: ignore[attr-defined]
        from ray.exceptions import AuthenticationError
    except ImportError:  # another Ray: ray.init says it
        return
    try:
        with _quiet():
            GcsClient(address=address)
    except AuthenticationError:
        raise InputError(None, None, _refused(address), parameter="ray_address") from None
    except Exception:  # anything else: ray.init says it, in check()
        return


def _refused(address: str) -> str:
    """One line for a Ray head that refused the connection's token: what to set."""
    if os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
        return (
            f"the Ray cluster at {address} requires token authentication: set RAY_AUTH_MODE=token, with the "
            "cluster's token in RAY_AUTH_TOKEN, in the file RAY_AUTH_TOKEN_PATH names, or in ~/.ray/auth_token"
        )
    if os.environ.get("RAY_AUTH_TOKEN"):
        source = "RAY_AUTH_TOKEN"
    elif os.environ.get("RAY_AUTH_TOKEN_PATH"):
        source = os.environ["RAY_AUTH_TOKEN_PATH"]
    else:
        default = Path.home() / ".ray" / "auth_token"
        source = str(default) if default.is_file() else "none found"
    return (
        f"the Ray cluster at {address} refused this machine's token ({source}): give the cluster's token in "
        "RAY_AUTH_TOKEN, in the file RAY_AUTH_TOKEN_PATH names, or in ~/.ray/auth_token"
    )


def _reachable(address: str) -> None:
    """Stop with one line when nothing listens at ``address`` (checked in seconds, not Ray's minutes)."""
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if not host or port is None:
        raise InputError(
            None, None, f"expected auto, HOST:PORT or ray://HOST:PORT, got {address!r}", parameter="ray_address"
        )
    try:
        with socket.create_connection((host, port), timeout=5):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise InputError(
            None, None, f"cannot connect to a Ray cluster at {address}: {reason}", parameter="ray_address"
        ) from None
