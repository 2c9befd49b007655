# Sourced first by the set-up scripts, before they change folder (so "$0" still names the
# script): root is needed (apt, dockerd, debootstrap); a user with sudo runs the script again
# through sudo, with its arguments; without sudo, one line says to run it as root.
# Usage: . "$(dirname "$0")/as-root.sh" "$@"
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "$(basename "$0"): run as root (sudo is not installed)" >&2; exit 1; }
  exec sudo -E bash "$0" "$@"
fi
