"""The ``pyprecision`` command line. Nothing imports this room."""
