"""The ``lorescan`` command line: a thin layer over the public API (``lorescan._cli.main``)."""
