"""Conformance suite for IPC codecs: the equivalence contract, properties and runner."""
