"""A class arriving at once on the course's JupyterHub, through its REST API:
``python bench/hub_load.py [--learners 5 10 20]`` (as root; it runs hub/setup.sh for that many
learners, learner1 ... learnerN, with exercises 1 to 3 released, as .ci/run does, then starts the
hub with hub/start.sh).

For each N, all N learners start together and each, in a thread of its own, does what a learner does
with exercise 3: **spawn** their server (the hub's API), **fetch** the exercise (nbgrader's
Assignment List API), **run** its first cells in a kernel (the setup check and the imports, over the
kernel's websocket), **answer** (the reference solution saved into the notebook, as typing would),
**validate** (the Validate button's request, run in a fork of the machine's zygote), validate
**again** and **submit**. It prints, per step, the median and 95th percentile of the wait and the
failures; then the proportional memory (PSS) of each kind of process: with every server and kernel
still alive, theirs (a kernel is a fork of the machine's zygote, grader/lab/course_zygote.py, and
its client), the zygote's (once per machine), and the most a Validate's fork held while it ran
(sampled as they ran); the CPU seconds a learner used in all; and what those give: learners per
GiB, learners on a 64 GiB box with ``RESERVE_GIB`` set aside, while they work and at a deadline
(each with a Validate running), and learners per core if each of them did this whole path once
every ten minutes. Targets (issues 24, 35): 0 failures at N=20 on 2 cores; 200 learners at a
deadline on a 16-core, 64 GiB box.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
PREFIX = Path(os.environ.get("HUB_PREFIX", "/opt/minigrad-hub"))
EXCHANGE = Path(os.environ.get("MINIGRAD_EXCHANGE", "/srv/nbgrader/exchange"))
EXERCISE = "ex3_freeing"
STEPS = ("spawn", "fetch", "run", "answer", "validate", "again", "submit")
TOKEN = uuid.uuid4().hex
KINDS = {"kernel client": "course_zygote.py --kernel", "server": "jupyterhub-singleuser",
         "kernel": "ipykernel_launcher", "checker": "course_validate.py --serve"}
"""A learner's processes by their arguments (the first that matches): the kernel's client names the
kernel it stands for; a kernel and a checker of their own are the hub's without a zygote."""
FORKS = {"minigrad-kernel": "kernel", "minigrad-check": "Validate"}
"""The zygote's forks, by the name they give themselves (their arguments are the zygote's)."""
RESERVE_GIB = 10
"""Of a class machine's memory, what the OS, the hub, its proxy and grading keep."""
BOX_GIB = 64


def learners(count):
    return [f"learner{number}" for number in range(1, count + 1)]


class Hub:
    """hub/start.sh with a service token for this bench (HUB_BENCH_TOKEN: hub/jupyterhub_config.py)."""

    def __init__(self, names, state):
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = dict(os.environ, HUB_PREFIX=str(PREFIX), HUB_STATE=str(state), HUB_PORT=str(port),
                   HUB_INTERNAL_PORT=str(_free_port()), HUB_PROXY_API_PORT=str(_free_port()),
                   HUB_LEARNERS=" ".join(names), HUB_BENCH_TOKEN=TOKEN, MINIGRAD_EXCHANGE=str(EXCHANGE))
        self.log = open(state / "hub.log", "wb")
        self.process = subprocess.Popen([str(ROOT / "hub" / "start.sh")], env=env, stdout=self.log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120  # hub/start.sh opens the hub once the zygote serves
        while True:
            try:
                self.call("GET", "hub/api/")
                return
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"the hub did not start: {state / 'hub.log'}") from None
                time.sleep(0.5)

    def call(self, method, path, data=None, form=None, timeout=300):
        body, headers = None, {"Authorization": f"token {TOKEN}"}
        if data is not None:
            body, headers["Content-Type"] = json.dumps(data).encode(), "application/json"
        elif form is not None:
            body = "&".join(f"{k}={v}" for k, v in form.items()).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        request = urllib.request.Request(f"{self.url}/{path}", data=body, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            text = answer.read()
        return json.loads(text) if text else None

    def stop(self):
        self.process.send_signal(signal.SIGTERM)  # the hub stops the users' servers
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.log.close()


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reset(name):
    """The learner as new: no fetched exercise, no submission, no nbgrader cache."""
    home = Path(os.path.expanduser(f"~{name}"))
    shutil.rmtree(home / EXERCISE, ignore_errors=True)
    shutil.rmtree(home / ".local" / "share" / "jupyter" / "nbgrader_cache", ignore_errors=True)
    for submission in (EXCHANGE / "minigrad" / "inbound").glob(f"{name}+{EXERCISE}+*"):
        shutil.rmtree(submission)


def answered_notebook(name, hub):
    """The learner's fetched notebook, as the contents API gives it, with the reference answers typed in."""
    model = hub.call("GET", f"user/{name}/api/contents/{EXERCISE}/{EXERCISE}.ipynb")
    source = nbformat.read(ROOT / "solutions" / EXERCISE / f"{EXERCISE}.ipynb", as_version=4)
    answers = {cell.metadata["nbgrader"]["grade_id"]: "\n".join(
        line for line in cell.source.splitlines() if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))
        for cell in source.cells if cell.metadata.get("nbgrader", {}).get("solution")}
    for cell in model["content"]["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell["source"] = answers[grade_id]
    return {"type": "notebook", "format": "json", "content": model["content"]}


def run_in_kernel(name, hub, code):
    """Start a kernel in the exercise's folder, run ``code`` over its websocket, wait for the reply."""
    from tornado.httpclient import HTTPRequest
    from tornado.ioloop import IOLoop
    from tornado.websocket import websocket_connect

    kernel = hub.call("POST", f"user/{name}/api/kernels", data={"name": "python3", "path": EXERCISE})
    message_id = uuid.uuid4().hex

    async def execute():
        socket = await websocket_connect(HTTPRequest(
            f"{hub.url.replace('http', 'ws')}/user/{name}/api/kernels/{kernel['id']}/channels",
            headers={"Authorization": f"token {TOKEN}"}))
        socket.write_message(json.dumps({
            "header": {"msg_id": message_id, "msg_type": "execute_request", "username": name, "session": message_id,
                       "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False}}))
        while True:
            reply = json.loads(await socket.read_message())
            if reply.get("parent_header", {}).get("msg_id") == message_id and reply["msg_type"] == "execute_reply":
                socket.close()
                if reply["content"]["status"] != "ok":
                    raise RuntimeError(f"the kernel said {reply['content'].get('ename')}")
                return

    IOLoop(make_current=False).run_sync(execute, timeout=300)


def learner_path(name, hub, waits, failures, start):
    """One learner's steps, timed; the first that fails ends the path (named in ``failures``)."""
    course = {"assignment_id": EXERCISE, "course_id": "minigrad"}
    step = "spawn"
    try:
        start.wait()
        began = time.monotonic()
        hub.call("POST", f"hub/api/users/{name}/server", data={})
        while not hub.call("GET", f"hub/api/users/{name}")["servers"].get("", {}).get("ready"):
            time.sleep(0.5)
        waits[step].append(time.monotonic() - began)
        for step, action in (
                ("fetch", lambda: _fetched(name, hub, course)),
                ("run", lambda: run_in_kernel(name, hub, "import torch\nimport minigrad\nfrom coursekit import testing")),
                ("answer", lambda: hub.call("PUT", f"user/{name}/api/contents/{EXERCISE}/{EXERCISE}.ipynb",
                                            data=answered_notebook(name, hub))),
                ("validate", lambda: _validated(name, hub)),
                ("again", lambda: _validated(name, hub)),
                ("submit", lambda: hub.call("POST", f"user/{name}/assignments/submit", form=course))):
            began = time.monotonic()
            action()
            waits[step].append(time.monotonic() - began)
    except Exception as error:  # noqa: BLE001 - whatever stops a learner is a failure to count
        failures.append(f"{name}: {step}: {type(error).__name__}: {error}")


def _fetched(name, hub, course):
    listed = hub.call("POST", f"user/{name}/assignments/fetch", form=course)["value"]
    if not any(a["assignment_id"] == EXERCISE and a["status"] == "fetched" for a in listed):
        raise RuntimeError(f"{EXERCISE} was not fetched: {json.dumps(listed)[:300]}")


def _validated(name, hub):
    reply = hub.call("POST", f"user/{name}/assignments/validate?path={EXERCISE}/{EXERCISE}.ipynb")
    if not reply["success"] or reply["value"].get("failed"):
        raise RuntimeError(f"Validate did not pass: {json.dumps(reply)[:300]}")


def processes(name):
    """(kind, pid) of the learner's live processes: server, kernel, its client, a checker."""
    listed = subprocess.run(["ps", "-ww", "-u", name, "-o", "pid=,comm=,args="], capture_output=True,
                            text=True).stdout
    for line in listed.splitlines():
        pid, comm, args = line.strip().split(maxsplit=2)
        kind = FORKS.get(comm) or next((kind for kind, mark in KINDS.items() if mark in args), None)
        if kind:
            yield kind, int(pid)


class ForkSampler(threading.Thread):
    """The largest PSS each Validate fork reached, read from /proc 20 times a second while they run."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peaks, self.done = {}, threading.Event()

    def run(self):
        while not self.done.wait(0.05):
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    if Path(f"/proc/{pid}/comm").read_text().strip() == "minigrad-check":
                        self.peaks[pid] = max(self.peaks.get(pid, 0.0), pss_mib(pid))
                except OSError:  # it ended meanwhile
                    continue


def zygote_mib():
    listed = subprocess.run(["ps", "-ww", "-u", "root", "-o", "pid=,args="], capture_output=True, text=True).stdout
    return sum(pss_mib(int(line.split()[0])) for line in listed.splitlines() if "course_zygote.py --serve" in line)


def pss_mib(pid):
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(name):
    """CPU time of all the learner's processes, those finished included (their parents' cutime)."""
    total = 0
    for line in subprocess.run(["ps", "-u", name, "-o", "pid="], capture_output=True, text=True).stdout.split():
        try:
            fields = Path(f"/proc/{line}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += sum(int(value) for value in fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")


def one_round(count, state):
    names = learners(count)
    for name in names:
        reset(name)
    hub = Hub(names, state)
    waits, failures, start = {step: [] for step in STEPS}, [], threading.Event()
    threads = [threading.Thread(target=learner_path, args=(name, hub, waits, failures, start)) for name in names]
    sampler = ForkSampler()
    try:
        for thread in [*threads, sampler]:
            thread.start()
        began = time.monotonic()
        start.set()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - began
        sampler.done.set()
        memory = {kind: [] for kind in [*KINDS, *FORKS.values()]}
        for name in names:
            for kind, pid in processes(name):
                if kind != "Validate":  # a Validate's fork that outlived its answer is counted below, at its peak
                    memory[kind].append(pss_mib(pid))
        memory["Validate"] = list(sampler.peaks.values())
        memory["zygote"] = [zygote_mib()]
        cpu = [cpu_seconds(name) for name in names]
    finally:
        hub.stop()
        deadline = time.monotonic() + 30  # the users' servers and kernels end a moment after the hub
        while any(True for name in names for _ in processes(name)) and time.monotonic() < deadline:
            time.sleep(0.5)
        for name in names:  # no submission of this bench's is left for the instructor to collect
            reset(name)
    return waits, failures, memory, cpu, elapsed


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--learners", type=int, nargs="+", default=[5, 10, 20], help="class sizes, one round each")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/hub_load.py: run as root (hub/setup.sh makes the learners, the hub spawns them)")
    names = learners(max(args.learners))
    subprocess.run([str(ROOT / "hub" / "setup.sh")], check=True, stdout=subprocess.DEVNULL, env=dict(
        os.environ, HUB_LEARNERS=" ".join(names), HUB_RELEASED=f"ex1_ops ex2_engine {EXERCISE}"))
    cores = os.cpu_count()
    print(f"{cores} cores, {os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.0f} GiB; "
          f"exercise {EXERCISE}; every learner starts at once")
    for count in args.learners:
        with tempfile.TemporaryDirectory(prefix="bench-hub-") as state:
            waits, failures, memory, cpu, elapsed = one_round(count, Path(state))
        print(f"\nN = {count}: {len(failures)} failures, all done in {elapsed:.0f} s")
        for failure in failures:
            print(f"  FAILED {failure}")
        for step in STEPS:
            if waits[step]:
                print(f"  {step:9s} p50 {statistics.median(waits[step]):6.2f} s   p95 {percentile(waits[step], 0.95):6.2f} s"
                      f"   ({len(waits[step])} of {count})")
        zygote = memory.pop("zygote")[0]
        validating = memory.pop("Validate")
        per_learner = {}
        for kind, values in memory.items():
            if values:
                print(f"  PSS {kind:14s} median {statistics.median(values):6.0f} MiB ({len(values)} processes)")
                per_learner[kind] = statistics.median(values) * len(values) / count
        if validating:
            print(f"  PSS {'Validate fork':14s} median {statistics.median(validating):6.0f} MiB at its peak, "
                  f"p95 {percentile(validating, 0.95):.0f} MiB ({len(validating)} forks)")
        print(f"  PSS zygote         {zygote:6.0f} MiB, once per machine")
        working = sum(per_learner.values())
        deadline = working + (percentile(validating, 0.95) if validating else 0)
        per_cpu = statistics.mean(cpu)
        room = (BOX_GIB - RESERVE_GIB) * 1024 - zygote
        print(f"  CPU per learner, spawn to submit: {per_cpu:.1f} s; memory per learner: {working:.0f} MiB working, "
              f"{deadline:.0f} MiB with a Validate running (its fork at p95)")
        print(f"  capacity: {1024 / working:.1f} learners per GiB, {1024 / deadline:.1f} at a deadline; on a "
              f"{BOX_GIB} GiB box with {RESERVE_GIB} GiB set aside, {room / working:.0f} learners, "
              f"{room / deadline:.0f} at a deadline (every one validating at once); "
              f"{600 / per_cpu:.0f} learners per core (each doing this path every 10 minutes)")


if __name__ == "__main__":
    main()
