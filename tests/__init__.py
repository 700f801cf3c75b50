"""culturebench's test suite (a package: helpers are imported as ``tests.servers`` etc.)."""
