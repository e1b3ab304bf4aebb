"""Images and files a tool can return: ``return Image.from_path("shot.png")``, or a list mixing
text and images. Each provider adapter sends them in its own form (see ``ToolResult.parts``);
a model without vision gets the text placeholder (:meth:`Image.placeholder`).

Bytes over :data:`MAX_MEDIA_BYTES`, or a media type the providers do not take, are refused when
the part is made, with the reason, so a tool's mistake never reaches a provider as a 400.
"""

from __future__ import annotations

import base64
import io
import mimetypes
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

__all__ = ["IMAGE_TYPES", "MAX_MEDIA_BYTES", "File", "Image", "MediaError", "MediaPart"]

#: The image types every provider with vision accepts.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
#: Document types sent as files (PDF and plain text are the ones all providers take).
FILE_TYPES = ("application/pdf", "text/plain", "text/csv", "text/markdown", "text/html")
#: Images and files larger than this (20 MB: the smallest provider limit) are refused.
MAX_MEDIA_BYTES = 20 * 1024 * 1024


class MediaError(ValueError):
    """An image or file that cannot be sent: too large, or a media type providers refuse."""


def _size_text(size: int) -> str:
    return f"{size / 1024:.0f} KB" if size < 1024 * 1024 else f"{size / 1024 / 1024:.1f} MB"


def _check(data: bytes, media_type: str, allowed: tuple[str, ...], kind: str) -> None:
    if media_type not in allowed:
        raise MediaError(
            f"{kind} of media type {media_type!r} cannot be sent; use one of {', '.join(allowed)}"
        )
    if len(data) > MAX_MEDIA_BYTES:
        raise MediaError(
            f"{kind} of {_size_text(len(data))} is over the {MAX_MEDIA_BYTES >> 20} MB limit; "
            "downscale or crop it first"
        )


class _Media:
    """What images and files share: their bytes as base64 and as a data URL."""

    data: bytes
    media_type: str

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    @property
    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.base64}"


def _guess_type(path: str | Path) -> str:
    return mimetypes.guess_type(str(path))[0] or "application/octet-stream"


@dataclass(frozen=True, kw_only=True)
class Image(_Media):
    """Image bytes and their media type (``image/png``, ``image/jpeg``, ``gif``, ``webp``)."""

    data: bytes = field(repr=False)
    media_type: str = "image/png"

    def __post_init__(self) -> None:
        _check(self.data, self.media_type, IMAGE_TYPES, "an image")

    @classmethod
    def from_path(cls, path: str | Path) -> Image:
        """An image file; the media type from its name."""
        return cls(data=Path(path).read_bytes(), media_type=_guess_type(path))

    @classmethod
    def from_pil(cls, image: Any, format: str = "PNG") -> Image:
        """A PIL image, encoded as ``format`` (PNG by default)."""
        buffer = io.BytesIO()
        image.save(buffer, format=format)
        return cls(data=buffer.getvalue(), media_type=f"image/{format.lower()}")

    def placeholder(self) -> str:
        """The text a model without vision reads instead."""
        return f"[image: {self.media_type}, {_size_text(len(self.data))}]"


@dataclass(frozen=True, kw_only=True)
class File(_Media):
    """A document (PDF, plain text...) with its media type and a name."""

    data: bytes = field(repr=False)
    media_type: str = "application/pdf"
    name: str = "document"

    def __post_init__(self) -> None:
        _check(self.data, self.media_type, FILE_TYPES, "a file")

    @classmethod
    def from_path(cls, path: str | Path) -> File:
        """A document file; the media type from its name."""
        return cls(data=Path(path).read_bytes(), media_type=_guess_type(path), name=Path(path).name)

    def placeholder(self) -> str:
        """The text a model without vision reads instead."""
        return f"[file: {self.name}, {self.media_type}, {_size_text(len(self.data))}]"


#: One part of a tool result: text, an image or a file.
MediaPart = Union[str, Image, File]
