#!/usr/bin/env bash
# What the test steps need from the system, installed where it is missing (sourced by test.sh
# and test_portability.sh; .ci/run installs nothing itself):
#   install_debian_packages PACKAGE...   apt-get install, as root or with password-less sudo;
#                                        returns 1 (printing nothing) where neither is possible
#   need_command COMMAND PACKAGE WHAT    COMMAND on the PATH, else Debian's PACKAGE installed;
#                                        where that fails, one line says what to install
install_debian_packages() {
  local sudo=""
  command -v apt-get > /dev/null || return 1
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo > /dev/null && sudo -n true 2> /dev/null || return 1
    sudo="sudo -n"
  fi
  echo "== installing Debian's $* (apt-get)"
  $sudo apt-get update -qq > /dev/null && DEBIAN_FRONTEND=noninteractive $sudo apt-get install \
    -y -qq "$@" > /dev/null
}

need_command() {
  local command=$1 package=$2 what=$3
  command -v "$command" > /dev/null && return 0
  install_debian_packages "$package" && command -v "$command" > /dev/null && return 0
  echo "error: $what needs $command: install Debian's $package (sudo apt-get install $package)" >&2
  return 1
}
