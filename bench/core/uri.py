"""Local file URIs as paths (stdlib only: an engine's own environment without pyiceberg imports it too)."""

from __future__ import annotations


def local_path(uri: str) -> str:
    """A local file URI (file:///x or file:/x) as a path; other URIs unchanged."""
    if uri.startswith("file://"):
        return uri[len("file://"):]
    if uri.startswith("file:"):
        return uri[len("file:"):]
    return uri
