"""A GGUF model's weights in another number format (``#weights=q8_0`` on a local model
string), converted once by llama.cpp's own quantizer and kept in tooluse's cache directory.

Why: llama.cpp multiplies a batch of many rows (a prompt, or several sequences decoded
together) with a faster routine for Q8_0 and F16 weights than for the embedded model's Q4_1
on a CPU like this project's (AVX2, no AVX-512). ``benchmarks/bench_weights.py`` measures the
difference and what it does to answers. A Q8_0 copy of a Q4_1 file is 1.6 times its size; F16
is 2.9 times and decodes a lone sequence slower.

The copy is named by the source file (its resolved path, size and modification time), the
format and the llama-cpp-python version, so a changed file or library converts again. A cache
that cannot be written costs only disk in the system's temporary folder: the copy goes there.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import tempfile
from pathlib import Path
from types import ModuleType

from tooluse.errors import BackendError

__all__ = ["WEIGHT_FORMATS", "cache_dir", "converted_weights"]

_log = logging.getLogger(__name__)

#: The formats ``#weights=`` converts to, by name: llama.cpp's file type constant for each.
#: Only formats that hold a 4-bit or 5-bit file's numbers without a new rounding of its own are
#: offered (a Q4_0 copy of a Q4_1 file rounds every weight again, and answers change).
WEIGHT_FORMATS = {"q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0", "f16": "LLAMA_FTYPE_MOSTLY_F16"}


def cache_dir(part: str) -> Path:
    """``$TOOLUSE_CACHE_DIR/<part>``, else ``<part>`` in the user's cache directory."""
    explicit = os.environ.get("TOOLUSE_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser() / part
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("tooluse", appauthor=False)) / part


def _copy_name(source: Path, weights: str, version: str) -> str:
    stat = source.stat()
    key = f"{source.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\0{weights}\0{version}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{source.stem}.{digest}.{weights.upper()}.gguf"


def converted_weights(source: Path, weights: str) -> Path:
    """The path of ``source``'s weights in the format ``weights`` (a key of
    :data:`WEIGHT_FORMATS`), converting them on first use (under a second for the embedded
    model). Raises :class:`BackendError` when llama.cpp cannot convert the file."""
    if weights not in WEIGHT_FORMATS:
        raise ValueError(
            f"unknown weights format {weights!r}: one of {', '.join(sorted(WEIGHT_FORMATS))}"
        )
    from tooluse.local.runtime import import_llama_cpp

    llama_cpp = import_llama_cpp()
    name = _copy_name(source, weights, str(getattr(llama_cpp, "__version__", "")))
    for folder in (cache_dir("weights"), Path(tempfile.gettempdir()) / "tooluse-weights"):
        target = folder / name
        if target.is_file():
            return target
        try:
            folder.mkdir(parents=True, exist_ok=True)
            return _convert(llama_cpp, source, target, weights)
        except OSError as exc:
            _log.warning("cannot keep the %s copy of %s in %s: %s", weights, source, folder, exc)
    raise BackendError(f"no folder could hold the {weights} copy of {source}")


def _convert(llama_cpp: ModuleType, source: Path, target: Path, weights: str) -> Path:
    """Write ``target`` through a temporary file beside it, so a copy is whole or absent."""
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, WEIGHT_FORMATS[weights])
    params.allow_requantize = True  # the source is quantized already
    params.nthread = max(1, min(os.cpu_count() or 1, 4))
    handle, partial = tempfile.mkstemp(dir=target.parent, suffix=".partial")
    os.close(handle)
    # llama-cpp-python prints llama.cpp's log (a line per tensor here) below this level only
    library_log = logging.getLogger("llama-cpp-python")
    level = library_log.level
    library_log.setLevel(max(level, logging.ERROR))
    try:
        status = llama_cpp.llama_model_quantize(
            str(source).encode(), partial.encode(), ctypes.byref(params)
        )
        if status != 0:
            raise BackendError(f"llama.cpp could not convert {source} to {weights} ({status})")
        os.replace(partial, target)
    finally:
        library_log.setLevel(level)
        if os.path.exists(partial):
            os.unlink(partial)
    _log.info("converted %s to %s: %s", source.name, weights, target)
    return target
