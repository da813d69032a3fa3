"""Lowering: the graph's canonical form and content digest, and passes run before codegen."""

from kiln.lowering.canonical import canonicalize, digest_text

__all__ = ["canonicalize", "digest_text"]
