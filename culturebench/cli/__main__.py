"""``python -m culturebench.cli``: the same as the ``culturebench`` command."""

from culturebench.cli.application import main

main()
