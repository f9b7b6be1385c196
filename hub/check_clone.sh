#!/usr/bin/env bash
# hub/check_clone.sh: exit 1, saying why, if anyone but root could read this clone, which holds
# solutions/ and the reference minigrad/ (hub/setup.sh runs it first, and makes nothing if it fails;
# "root" is whoever runs this, as hub/setup.sh runs as root). A user reaches a file only by entering
# every folder on its path, so the clone is closed to the hub's users as soon as one folder on its
# real path, the clone's own included, is root's and closed to its group and to others: the files
# inside then stay unreadable whatever umask made them.
set -euo pipefail
clone="$(cd "$(dirname "$0")/.." && pwd -P)"
folder="$clone"
modes=""
while :; do
  read -r owner mode < <(stat -c '%u %a' "$folder")
  [ "$owner" = "$(id -u)" ] && (( (8#$mode & 8#055) == 0 )) && exit 0
  modes+="${modes:+, }$folder $mode"
  [ "$folder" = / ] && break
  folder="$(dirname "$folder")"
done
cat >&2 <<EOF
hub/setup.sh: the hub's users could read $clone (solutions/, the reference minigrad/):
no folder on its path is closed to them (modes: $modes).
Keep the clone where only root can enter, then run hub/setup.sh again from there, e.g.
  chmod 700 $clone
or clone it into /root (mode 700).
EOF
exit 1
