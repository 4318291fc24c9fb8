#!/usr/bin/env bash
# Installs the Debian packages servesim builds against, only those missing (needs root or sudo).
set -euo pipefail
# --sanitizers adds clang and its sanitizer/libFuzzer runtimes (scripts/sanitize.sh, fuzz/run.sh).
# Open MPI (libopenmpi-dev, openmpi-bin) is optional for the build (`--mpi`; CMake builds without it)
# but installed here so that CI builds and tests the MPI path.
# python3 and jq: repository checks and doc examples `make test` runs (scripts/*.py; ctest doc_examples
# reruns scripts/compare_policies.sh, which reads reports with jq).
pkgs=(cmake g++ make libeigen3-dev nlohmann-json3-dev libtbb-dev libcxxopts-dev doctest-dev libopenmpi-dev openmpi-bin python3 jq)
[ "${1:-}" = "--sanitizers" ] && pkgs+=(clang libclang-rt-14-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
$sudo_cmd apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
