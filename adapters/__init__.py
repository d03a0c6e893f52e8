"""Framework adapters shipped with flowdbg, one subpackage per framework.

Each subpackage's ``__init__`` is a plugin module (entry point group ``flowdbg``) that registers
its :class:`flowdbg.Adapter` and imports its framework only when a target is attached.
"""
