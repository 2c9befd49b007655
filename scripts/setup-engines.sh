#!/usr/bin/env bash
# Sets up the container engines dnnbench drives, on a fresh Debian 12 machine, as root:
#   - Debian's docker.io, with dockerd started in the background (overlay2);
#   - Apptainer 1.4.x from Debian unstable, run against sid's glibc from a private folder
#     (Debian 12's glibc 2.36 is too old for it), so the system's libc is never touched.
# Idempotent: a second run only (re)starts what is not running.
set -euo pipefail

log() { printf '[setup-engines] %s\n' "$*"; }
[ "$(id -u)" = 0 ] || { echo "setup-engines: run as root" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive

need_apt=()
command -v dockerd >/dev/null || need_apt+=(docker.io)
command -v patchelf >/dev/null || need_apt+=(patchelf)
command -v debootstrap >/dev/null || need_apt+=(debootstrap)
command -v squashfs-tools >/dev/null 2>&1 || dpkg -s squashfs-tools >/dev/null 2>&1 || need_apt+=(squashfs-tools)
dpkg -s uidmap >/dev/null 2>&1 || need_apt+=(uidmap)
dpkg -s fuse2fs >/dev/null 2>&1 || need_apt+=(fuse2fs)
if [ ${#need_apt[@]} -gt 0 ]; then
  log "apt-get install ${need_apt[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# --- docker engine -----------------------------------------------------------
if ! docker info >/dev/null 2>&1; then
  log "starting dockerd"
  mkdir -p /var/log
  nohup dockerd --storage-driver=overlay2 >/var/log/dockerd.log 2>&1 &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "setup-engines: dockerd did not start, see /var/log/dockerd.log" >&2; tail -20 /var/log/dockerd.log >&2; exit 1; }
fi
log "docker $(docker version --format '{{.Server.Version}}')"

# --- apptainer ---------------------------------------------------------------
PRIV=/opt/apptainer-sid          # sid's libc and friends, used by apptainer alone
if ! apptainer --version >/dev/null 2>&1; then
  log "installing apptainer from Debian unstable (private glibc in $PRIV)"
  work=$(mktemp -d)
  mkdir -p "$work/lists/partial" "$work/debs"
  echo "deb http://deb.debian.org/debian sid main" >"$work/sid.list"
  apt_sid=(-o Dir::Etc::SourceList="$work/sid.list" -o Dir::Etc::SourceParts=/dev/null
           -o Dir::State::Lists="$work/lists" -o Debug::NoLocking=1)
  apt-get "${apt_sid[@]}" update -qq
  (cd "$work/debs" && apt-get "${apt_sid[@]}" download apptainer libc6 libseccomp2 libsqlite3-0 >/dev/null)
  mkdir -p "$PRIV"
  for deb in "$work"/debs/libc6_*.deb "$work"/debs/libseccomp2_*.deb "$work"/debs/libsqlite3-0_*.deb; do
    dpkg-deb -x "$deb" "$work/libs"
  done
  cp -a "$work"/libs/usr/lib/x86_64-linux-gnu/. "$PRIV"/
  [ -d "$work/libs/lib/x86_64-linux-gnu" ] && cp -a "$work"/libs/lib/x86_64-linux-gnu/. "$PRIV"/
  [ -e "$PRIV/ld-linux-x86-64.so.2" ] || cp -a "$work"/libs/lib64/ld-linux-x86-64.so.2 "$PRIV"/ 2>/dev/null || true
  dpkg-deb -x "$work"/debs/apptainer_*.deb "$work/app"
  cp -a "$work/app/usr/bin/." /usr/bin/
  mkdir -p /etc/apptainer /usr/lib/x86_64-linux-gnu/apptainer /usr/libexec
  cp -a "$work/app/etc/apptainer/." /etc/apptainer/
  cp -a "$work/app/usr/lib/x86_64-linux-gnu/apptainer/." /usr/lib/x86_64-linux-gnu/apptainer/
  [ -d "$work/app/usr/libexec/apptainer" ] && cp -a "$work/app/usr/libexec/apptainer" /usr/libexec/
  ld="$PRIV/ld-linux-x86-64.so.2"
  for bin in /usr/bin/apptainer $(find /usr/lib/x86_64-linux-gnu/apptainer /usr/libexec/apptainer -type f -name 'starter*' 2>/dev/null); do
    if file "$bin" 2>/dev/null | grep -q 'dynamically linked' || readelf -l "$bin" 2>/dev/null | grep -q INTERP; then
      patchelf --set-interpreter "$ld" --force-rpath --set-rpath "$PRIV" "$bin"
    fi
  done
  rm -rf "$work"
fi
mkdir -p /var/lib/apptainer/mnt/session
conf=/etc/apptainer/apptainer.conf
grep -q '^root default capabilities = no' "$conf" || sed -i 's/^root default capabilities = .*/root default capabilities = no/' "$conf"
for f in /etc/subuid /etc/subgid; do grep -q '^root:' "$f" 2>/dev/null || echo 'root:100000:65536' >>"$f"; done
# spython calls `singularity`; Apptainer answers to that name too.
command -v singularity >/dev/null || ln -sf /usr/bin/apptainer /usr/local/bin/singularity
log "$(apptainer --version)"
