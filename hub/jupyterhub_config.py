"""JupyterHub for a class of the course (start it with hub/start.sh, after hub/setup.sh).

Users log in with their Unix password (PAM); the hub runs as root and starts each user's JupyterLab
as that Unix user (LocalProcessSpawner), from the venv hub/setup.sh made, with nbgrader's course and
exchange configured: learners get a learner's lab (Assignment List, Validate), the instructor
nbgrader's instructor tools too. A learner's lab opens on the course's 00_start_here, in ~/course:
the lessons, copied into the learner's home at each start (only what is not there yet: their notes
and runs stay theirs), which run live in the "minigrad lessons" kernel (hub/setup.sh: the course's
minigrad, its parts compiled). Settings from the environment:
  HUB_PREFIX (/opt/minigrad-hub)  what hub/setup.sh made; HUB_STATE ($HUB_PREFIX/state) the hub's
                                  database, cookie secret and proxy pid (root only)
  HUB_IP (127.0.0.1), HUB_PORT (8000)  where the hub listens; HUB_INTERNAL_PORT (8081) and
  HUB_PROXY_API_PORT (8001)       the hub's and the proxy's own ports, on 127.0.0.1
  HUB_LEARNERS ("learner1 learner2"), HUB_INSTRUCTOR (instructor)  who may log in
  MINIGRAD_EXCHANGE (/srv/nbgrader/exchange)  nbgrader's exchange
  HUB_MEMORY (4G)                 the memory each process of a user's server may take (RLIMIT_DATA:
                                  a runaway tensor is that kernel's MemoryError, not the OOM killer's
                                  choice among everyone's processes); HUB_PROCESSES (256) the
                                  processes a user may run at once (RLIMIT_NPROC)
  HUB_IDLE (3600)                 seconds after which an idle server is stopped (jupyterhub-idle-culler)
  HUB_BENCH_TOKEN                 a token for bench/hub_load.py, which drives the learners' servers
  HUB_ZYGOTE (set by hub/start.sh) the socket of the machine's zygote, which forks the users' kernels
                                  and Validates (grader/lab/course_zygote.py)

For a class on one machine: every kernel talks to its server over Unix sockets (jupyter_client's
IPC transport: TCP ports of one network namespace collide when many kernels start at once), torch
uses one thread per process (OMP_NUM_THREADS=1: a learner's tensors are small, and 200 learners'
kernels each using every core would only contend), the users' servers run at a lower priority than
the hub (nice 5), and JupyterLab neither checks nor offers a build (grader/lab/*/labconfig).
"""
import os
import subprocess
import sys

c = get_config()  # noqa: F821 - provided by traitlets when JupyterHub loads this file

PREFIX = os.environ.get("HUB_PREFIX", "/opt/minigrad-hub")
STATE = os.environ.get("HUB_STATE") or os.path.join(PREFIX, "state")
LEARNERS = os.environ.get("HUB_LEARNERS", "learner1 learner2").split()
INSTRUCTOR = os.environ.get("HUB_INSTRUCTOR", "instructor")
EXCHANGE = os.environ.get("MINIGRAD_EXCHANGE", "/srv/nbgrader/exchange")

c.JupyterHub.ip = os.environ.get("HUB_IP", "127.0.0.1")
c.JupyterHub.port = int(os.environ.get("HUB_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(os.environ.get("HUB_INTERNAL_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ.get('HUB_PROXY_API_PORT', '8001')}"
c.ConfigurableHTTPProxy.pid_file = os.path.join(STATE, "proxy.pid")
c.JupyterHub.db_url = "sqlite:///" + os.path.join(STATE, "jupyterhub.sqlite")
c.JupyterHub.cookie_secret_file = os.path.join(STATE, "jupyterhub_cookie_secret")
c.JupyterHub.cleanup_servers = True  # the users' servers stop with the hub

c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = set(LEARNERS) | {INSTRUCTOR}
c.Authenticator.admin_users = {INSTRUCTOR}

c.JupyterHub.spawner_class = "localprocess"


def _bytes(size):
    """'4G', '512M', '1073741824': bytes (prlimit takes a plain number)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(size[:-1]) * units[size[-1].upper()] if size[-1].upper() in units else int(size)


c.Spawner.cmd = ["prlimit", f"--data={_bytes(os.environ.get('HUB_MEMORY', '4G'))}",
                 f"--nproc={os.environ.get('HUB_PROCESSES', '256')}", "--", "nice", "-n", "5",
                 os.path.join(PREFIX, "venv", "bin", "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.http_timeout = 120  # a busy machine starts JupyterLab slowly
c.Spawner.start_timeout = 120
c.Spawner.environment = {"PATH": os.path.join(PREFIX, "venv", "bin") + ":/usr/local/bin:/usr/bin:/bin",
                         "MINIGRAD_EXCHANGE": EXCHANGE, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                         "MINIGRAD_ZYGOTE": os.environ.get("HUB_ZYGOTE", "")}

c.JupyterHub.services = [{"name": "idle-culler", "command": [
    sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={os.environ.get('HUB_IDLE', '3600')}"]}]
c.JupyterHub.load_roles = [{"name": "idle-culler", "services": ["idle-culler"],
                            "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]}]
if os.environ.get("HUB_BENCH_TOKEN"):
    c.JupyterHub.services.append({"name": "bench", "api_token": os.environ["HUB_BENCH_TOKEN"]})
    c.JupyterHub.load_roles.append({"name": "bench", "services": ["bench"], "scopes": [
        "list:users", "read:users", "servers", "access:servers"]})


def role_config(spawner):
    """Each role's lab (grader/lab/learner or grader/lab/instructor), then nbgrader's course and exchange;
    the instructor's also has the course's own nbgrader config (~/minigrad/grader), for Formgrader."""
    etc = os.path.join(PREFIX, "etc")
    if spawner.user.name == INSTRUCTOR:
        course = os.path.join(os.path.expanduser(f"~{INSTRUCTOR}"), "minigrad", "grader")
        path = [f"{etc}/instructor", course, f"{etc}/common"]
    else:
        path = [f"{etc}/learner", f"{etc}/common"]
        _copy_lessons(spawner.user.name)
        spawner.default_url = "/lab/tree/course/00_start_here.ipynb"
    spawner.environment["JUPYTER_CONFIG_PATH"] = ":".join(path)


def _copy_lessons(user):
    """The lessons hub/setup.sh prepared, into ~user/course, those not there yet, copied as the user:
    the hub never writes into a learner's home with its own rights."""
    source, target = os.path.join(PREFIX, "lessons", "course"), os.path.join(os.path.expanduser(f"~{user}"), "course")
    missing = [os.path.join(source, name) for name in sorted(os.listdir(source))
               if not name.startswith(".") and not os.path.lexists(os.path.join(target, name))]
    if missing:
        subprocess.run(["runuser", "-u", user, "--", "mkdir", "-p", target], check=True)
        subprocess.run(["runuser", "-u", user, "--", "cp", *missing, target], check=True)


c.Spawner.pre_spawn_hook = role_config
