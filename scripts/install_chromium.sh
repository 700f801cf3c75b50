#!/usr/bin/env bash
# Debian's Chromium for the site's browser tests (driven by Playwright through
# executable_path; never `playwright install`). Installs it with apt-get when it is missing and
# this user can (root, or sudo without a password); otherwise says so and carries on: the
# browser tests then skip (and fail under CI=true, where it must be present).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" = 0 ]; then
  apt-get update -qq && apt-get install -y -qq chromium >/dev/null
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null
else
  echo "install_chromium: /usr/bin/chromium is missing and apt-get needs root: 'sudo apt-get install chromium' to run the site's browser tests" >&2
fi
