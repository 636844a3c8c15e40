#!/usr/bin/env bash
# Installs the Debian packages the local cluster and the image builds use.
# Debian's containerd (1.6) + runc + CNI plugins are the runtime; buildah and
# debootstrap build images without a Docker engine.
. "$(dirname "$0")/lib.sh"

PKGS=(containerd runc containernetworking-plugins iptables conntrack ethtool socat kmod
      buildah debootstrap openssl gcc libc6-dev jq curl procps iproute2 util-linux docker-registry skopeo)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if (( ${#missing[@]} == 0 )); then
  skip "debian packages" "present"
  exit 0
fi
need_root
_apt() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # No init system runs here: keep the packages from starting their services.
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d.wsps
  local had_policy=0
  [[ -e /usr/sbin/policy-rc.d ]] && had_policy=1
  ((had_policy)) || { cp /usr/sbin/policy-rc.d.wsps /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
  ((had_policy)) || rm -f /usr/sbin/policy-rc.d
  rm -f /usr/sbin/policy-rc.d.wsps
}
step "apt-get install ${missing[*]}" "$CACHE_DIR/build-logs/apt.log" _apt
