"""Seed 004's building blocks as subjects of their own (unique ids, ...).

Each block is a subpackage (``lookup.blocks.ids``) that imports only the foundation
(``lookup.kit``, ``lookup.settings``, ``lookup.errors``), never a system: the blocks
are what the systems are built from, studied and measured on their own. This module
imports nothing, so ``import lookup.blocks.ids`` pulls in only the block asked for.
"""
