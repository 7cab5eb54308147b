# /proc readers shared by the checks that watch real processes
# (scripts/check-daemon, scripts/check-placement). Source it; bash only.

# state letter of /proc/PATH/stat (PATH = PID or PID/task/TID); empty if gone
state_of() {
  local s
  { read -r s <"/proc/$1/stat"; } 2>/dev/null || return 0
  s=${s##*) }
  echo "${s%% *}"
}
zombie() { [ "$(state_of "$1")" = Z ]; }
gone() { [ ! -e "/proc/$1" ] || zombie "$1"; }
# Cpus_allowed_list of /proc/PATH/status; empty if gone. The file is read
# in one go: line-by-line reads seek back between lines, and a /proc file
# regenerated in between (its State line changed) comes out misaligned.
allowed_of() {
  local s=""
  { read -r -d '' s <"/proc/$1/status"; } 2>/dev/null || true
  case $s in *Cpus_allowed_list:*) ;; *) return 0 ;; esac
  s=${s#*Cpus_allowed_list:}
  s=${s%%$'\n'*}
  echo "${s//[[:space:]]/}"
}
# CPU a task last ran on (stat field 39); empty if gone
cpu_of() {
  local s f
  { read -r s <"/proc/$1/stat"; } 2>/dev/null || return 0
  s=${s##*) }
  read -r -a f <<<"$s"
  echo "${f[36]}"
}
