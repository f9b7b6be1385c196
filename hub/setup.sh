#!/usr/bin/env bash
# hub/setup.sh: set up a multi-user JupyterHub for the course on this machine (run as root; again
# after a change: it is idempotent). What it makes:
#   $HUB_PREFIX (/opt/minigrad-hub)    venv/: JupyterHub, JupyterLab, nbgrader, torch and minigrad, for
#                                     the hub and every user's server (readable by all; the project's
#                                     own .venv may link to a Python in a home folder others cannot enter);
#                                     etc/: the users' Jupyter config (the learner's and the instructor's
#                                     lab, nbgrader's course id and exchange) and the machine's zygote, which
#                                     hub/start.sh starts (run/: its socket); lessons/: the lessons (each
#                                     learner's server starts on a copy of its own, ~/course:
#                                     hub/jupyterhub_config.py) and lib/, the course's minigrad for their
#                                     kernel, compiled where it holds a part (below); passwords (root only):
#                                     the users' passwords; state/ (root only, hub/start.sh): the hub's database
#   configurable-http-proxy             JupyterHub's proxy, from npm (global)
#   Unix users learner1, learner2, instructor, homes mode 700, passwords in $HUB_PREFIX/passwords
#   /srv/nbgrader/exchange              nbgrader's exchange, mode 1777 as nbgrader's docs ask
#   ~instructor/minigrad                the course (sources with solutions, owned by the instructor, who
#                                       releases the exercises named in HUB_RELEASED into the exchange)
# Start the hub with hub/start.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
HUB_PREFIX="${HUB_PREFIX:-/opt/minigrad-hub}"
EXCHANGE="${MINIGRAD_EXCHANGE:-/srv/nbgrader/exchange}"
LEARNERS="${HUB_LEARNERS:-learner1 learner2}"
INSTRUCTOR="${HUB_INSTRUCTOR:-instructor}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
PROXY_VERSION=4.6.3
CYTHON_SPEC="cython==3.1.8"
[ "$(id -u)" = 0 ] || { echo "hub/setup.sh: run as root (it creates users and a hub that spawns them)" >&2; exit 1; }
# This clone holds the answers: it must be closed to the users this script makes.
hub/check_clone.sh

# A Python every user can run: the system's, not one in a home folder.
python=/usr/bin/python3
mkdir -p "$HUB_PREFIX"
chmod 755 "$HUB_PREFIX"
venv="$HUB_PREFIX/venv"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
stamp="$venv/.installed-$({ cat pyproject.toml; echo "$TORCH_SPEC"; find minigrad coursekit grader/parts.py -name '*.py' | sort | xargs cat; } | cksum | cut -d' ' -f1)"
if [ ! -e "$stamp" ]; then
  echo "hub/setup.sh: installing torch, JupyterHub, JupyterLab, nbgrader and minigrad into $venv (pip's progress below)"
  "$venv/bin/python" -c "import torch" 2>/dev/null || "$venv/bin/pip" install "$TORCH_SPEC"
  # not editable, and built from a copy: the users' servers never read this clone, nor pip write into it.
  # Every user's server reads this minigrad: it holds no learner's part (all are stubs, as in
  # exercise 1's staged package), so no learner can read a reference answer in it.
  src="$(mktemp -d)"
  cp -r pyproject.toml README.md coursekit "$src/"
  "$python" -c "import sys; from grader.parts import stage_package; stage_package('minigrad', sys.argv[1], 1)" "$src/minigrad"
  "$venv/bin/pip" install "$src[course,hub]"
  rm -rf "$src"
  touch "$stamp"
fi

command -v configurable-http-proxy > /dev/null || {
  echo "hub/setup.sh: installing JupyterHub's proxy, configurable-http-proxy $PROXY_VERSION, with npm"
  npm install -g "configurable-http-proxy@$PROXY_VERSION"
}

# The users' Jupyter config: nbgrader's course and exchange for all, and each role's lab.
etc="$HUB_PREFIX/etc"
rm -rf "$etc"
mkdir -p "$etc/common"
cp -r grader/lab/learner grader/lab/instructor grader/lab/course_validate.py grader/lab/course_formgrader.py \
  grader/lab/course_zygote.py grader/lab/labextensions "$etc/"
cat > "$etc/common/nbgrader_config.py" <<EOF
# The course's nbgrader settings for every user of the hub (written by hub/setup.sh).
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "minigrad"
c.Exchange.root = "$EXCHANGE"
c.Execute.timeout = 120  # seconds per cell, when a learner presses Validate
c.Validator.width = 108  # a check's report has lines of up to 100 characters: Validate cuts none
c.KernelManager.transport = "ipc"  # the kernels autograde starts: Unix sockets, no TCP port to collide on
EOF
# Every user's server: kernels on Unix sockets (many starting at once collide on TCP ports of one
# network namespace), and a kernel idle for half an hour shut down (its memory back).
cat > "$etc/common/jupyter_server_config.json" <<'EOF'
{
  "KernelManager": {"transport": "ipc"},
  "MappingKernelManager": {"cull_idle_timeout": 1800, "cull_interval": 300}
}
EOF
chmod -R a+rX "$etc"

# The lessons run live, with the course's minigrad, compiled where it holds a learner's part. Each
# module that holds a part is a Cython build of the reference (pure-Python mode: the module as it
# is, docstrings stripped) beside its text with every part a stub, as exercise 1 hands it out: Python
# imports the build, course/lesson.py's `source` prints the text, and no learner can read a part's
# code. Only the lessons' kernel ("minigrad lessons", which the lessons name) has lessons/lib on its
# path; the exercises' kernels import their staged package, and the grading sandbox sees the venv,
# not lessons/. The lessons go out without outputs, as the course ships them: predict, then run.
lessons="$HUB_PREFIX/lessons"
lessons_stamp="$lessons/.built-$({ echo "$CYTHON_SPEC"; find minigrad course grader/parts.py -name '*.py' -o -name '*.ipynb' | sort | xargs cat; } | cksum | cut -d' ' -f1)"
if [ ! -e "$lessons_stamp" ]; then
  echo "hub/setup.sh: compiling the lessons' minigrad with Cython (about 30 seconds on 2 cores)"
  "$venv/bin/pip" install -q "$CYTHON_SPEC"
  build="$(mktemp -d)"
  cp -r minigrad "$build/"
  find "$build" -name __pycache__ -prune -exec rm -rf {} +
  mapfile -t parts < <("$python" -c "from grader.parts import find_parts; print(*sorted({str(p.path) for p in find_parts('minigrad')}), sep='\n')")
  (cd "$build" && "$venv/bin/cythonize" -i -q -j "$(nproc)" -3 --no-docstrings -X annotation_typing=False "${parts[@]}") \
    > "$HUB_PREFIX/lessons.log" 2>&1 || { cat "$HUB_PREFIX/lessons.log" >&2; exit 1; }
  rm -rf "$lessons" && mkdir -p "$lessons/lib" "$lessons/course"
  "$python" -c "import sys; from grader.parts import stage_package; stage_package('minigrad', sys.argv[1], 1)" "$lessons/lib/minigrad"
  for part in "${parts[@]}"; do cp "$build/${part%.py}".cpython-*.so "$lessons/lib/${part%/*}/"; done
  rm -rf "$build"
  cp course/*.ipynb course/lesson.py course/README.md "$lessons/course/"
  "$venv/bin/python" -c "import sys, nbformat
for path in sys.argv[1:]:
    notebook = nbformat.read(path, as_version=4)
    notebook.metadata.kernelspec = {'name': 'minigrad-lessons', 'display_name': 'Python 3 (minigrad lessons)', 'language': 'python'}
    nbformat.write(notebook, path)" "$lessons"/course/*.ipynb
  touch "$lessons_stamp"
fi
rm -rf "$HUB_PREFIX/course"  # an earlier setup's lessons, with saved outputs that print parts' code
# Both kernels start as forks of the machine's zygote (hub/start.sh; grader/lab/course_zygote.py),
# which imported torch once for all of them, through a small client that starts the kernel itself
# when there is no zygote to ask.
kernel="\"$venv/bin/python\", \"-I\", \"-S\", \"$etc/course_zygote.py\", \"--kernel\", \"$venv/bin/python\", \"-m\", \"ipykernel_launcher\", \"-f\", \"{connection_file}\""
mkdir -p "$venv/share/jupyter/kernels/minigrad-lessons" "$venv/share/jupyter/kernels/python3"
cat > "$venv/share/jupyter/kernels/python3/kernel.json" <<EOF
{"argv": [$kernel],
 "display_name": "Python 3 (ipykernel)", "language": "python", "metadata": {"debugger": true}}
EOF
cat > "$venv/share/jupyter/kernels/minigrad-lessons/kernel.json" <<EOF
{"argv": [$kernel],
 "display_name": "Python 3 (minigrad lessons)", "language": "python", "env": {"PYTHONPATH": "$lessons/lib"}}
EOF
chmod -R a+rX "$lessons" "$venv/share/jupyter/kernels"

# The accounts: their own Unix users, homes no one else can read.
passwords="$HUB_PREFIX/passwords"
touch "$passwords"
chmod 600 "$passwords"
for user in $LEARNERS "$INSTRUCTOR"; do
  id "$user" > /dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
  chmod 700 "$(getent passwd "$user" | cut -d: -f6)"
  if ! grep -q "^$user:" "$passwords"; then
    password="$(head -c 12 /dev/urandom | base64 | tr -d '/+=')"
    echo "$user:$password" | chpasswd
    echo "$user:$password" >> "$passwords"
  fi
done

# nbgrader's exchange: everyone writes, the sticky bit keeps each one's files their own; nbgrader
# makes the course's outbound (readable by all) and inbound (writable, not listable) inside.
mkdir -p "$EXCHANGE"
chmod 1777 "$EXCHANGE"

# The instructor's course: a copy of the sources, solutions included, in the instructor's home.
home="$(getent passwd "$INSTRUCTOR" | cut -d: -f6)"
course="$home/minigrad"
# Copied once (later it is the instructor's to change), or again with HUB_REFRESH_COURSE=1 (the
# sources only: the gradebook, submissions and grades in its .course/ stay: nbgrader then refuses
# to change the cells of an exercise that has submissions). HUB_FRESH_CLASS=1 starts a new class:
# the last one's gradebook, submissions, grades and exchange are deleted.
if [ "${HUB_FRESH_CLASS:-}" = 1 ]; then
  rm -rf "${course:?}/.course" "${EXCHANGE:?}/minigrad"
fi
if [ ! -d "$course" ] || [ "${HUB_REFRESH_COURSE:-}" = 1 ]; then
  mkdir -p "$course"
  for folder in minigrad coursekit grader course exercises solutions; do rm -rf "${course:?}/$folder"; done
  cp -r minigrad coursekit grader course exercises solutions pyproject.toml "$course/"
  find "$course" -name __pycache__ -prune -exec rm -rf {} +
  chown -R "$INSTRUCTOR:" "$course"
  rm -f "$course/.course/built"
fi
cat > "$home/.profile" <<EOF
# written by hub/setup.sh: the course's Python and exchange in the instructor's shell
export PATH="$venv/bin:\$PATH" MINIGRAD_EXCHANGE="$EXCHANGE"
EOF
chown "$INSTRUCTOR:" "$home/.profile"
as_instructor() {
  runuser -u "$INSTRUCTOR" -- env -i -C "$course" HOME="$home" PATH="$venv/bin:/usr/bin:/bin" LANG=C.UTF-8 \
    MINIGRAD_EXCHANGE="$EXCHANGE" python -m grader "$@"
}
# The instructor's gradebook learns the exercises (build), then every exercise goes to the exchange.
if [ ! -e "$course/.course/built" ]; then
  echo "hub/setup.sh: building the instructor's course: each exercise's release and gradebook entry (seconds each)"
  as_instructor build > "$HUB_PREFIX/build.log" 2>&1 || { cat "$HUB_PREFIX/build.log" >&2; exit 1; }
  runuser -u "$INSTRUCTOR" -- touch "$course/.course/built"
fi
# Exercise N's release holds minigrad with the reference code of exercises 1 to N-1 (its checks need
# a working engine): release an exercise once the one before it is due. HUB_RELEASED names the
# exercises released now (default: the first); any other is taken out of the exchange.
released=" ${HUB_RELEASED:-ex1_ops} "
for spec in grader/exercises/ex*.py; do
  exercise="$(basename "$spec" .py)"
  if [[ "$released" == *" $exercise "* ]]; then
    as_instructor release "$exercise"
  else
    rm -rf "${EXCHANGE:?}/minigrad/outbound/$exercise"
  fi
done
echo "hub/setup.sh: ready; start the hub with hub/start.sh (passwords: $passwords)"
