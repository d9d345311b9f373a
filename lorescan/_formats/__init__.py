"""Readers and writers for every lorebook, character card and chat format lorescan knows.

One module per format family; each declares its formats (``FORMATS``) in the registry's terms,
and :mod:`lorescan._formats.registry` collects them (plus plugins of the ``lorescan.formats``
entry-point group). :mod:`lorescan._load` detects a file's format from its content through the
registry and dispatches to the format's reader and writer. Conversions to engine entries follow
SillyTavern's own importers where it has one, so a book behaves in lorescan as it would after
importing it into SillyTavern. Where a new format goes: see the registry module.
"""
