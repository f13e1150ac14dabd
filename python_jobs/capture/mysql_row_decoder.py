"""A rows event's images decoded by a function written for its columns: mysql_row_images' loop over
the columns, unrolled.

That loop calls a reader per column (a call, a tuple, a dict store each) and was two fifths of a
following capture's time (BENCHMARKS.md, "Capture"). Here an image without NULLs is read by straight-
line code: integers and doubles next to each other unpacked at once, a VARCHAR's or TEXT's length and
text read in place, any other column through its reader, and the image made as one dict display.
An image with a NULL takes the loop (image_with_nulls). The images are the loop's
(tests/test_capture_mysql_row_decoder.py; tests/test_capture_mysql_row_images.py on a real server).

The code depends only on the columns' shape (which reads, of which sizes): it is compiled once per
shape, and each event's readers, names and encodings are the function's globals.
"""

from __future__ import annotations

import builtins
import functools
import struct
import types
from typing import Any, Callable

Image = dict[str, Any]
Reader = Callable[[bytes, int], "tuple[Any, int]"]
ImageWithNulls = Callable[[bytes, int, list[tuple[str, Reader]], int], "tuple[Image, int]"]


def decoder(plan: list[tuple[str, Reader]], image_with_nulls: ImageWithNulls) -> Callable[[bytes], list[Image]]:
    """A function of an event's body that gives every image of its rows, in order."""
    shape: list[tuple[Any, ...]] = []
    names: dict[str, Any] = {"__builtins__": builtins, "plan": plan, "with_nulls": image_with_nulls}
    for index, (name, read) in enumerate(plan):
        names[f"n{index}"] = name
        inline = getattr(read, "inline", None)
        if inline is not None and inline[0] == "fixed":
            if shape and shape[-1][0] == "fixed":  # unpacked with the integers and doubles just before it
                shape[-1] = ("fixed", shape[-1][1] + inline[1][1:], shape[-1][2] + 1)
            else:
                shape.append(("fixed", inline[1], 1))
        elif inline is not None and inline[0] == "text":
            names[f"c{index}"], names[f"x{index}"] = inline[2], inline[3]
            shape.append(("text", inline[1]))
        else:
            names[f"r{index}"] = read
            shape.append(("call",))
    for number, part in enumerate(shape):
        if part[0] == "fixed":
            names[f"u{number}"] = struct.Struct(part[1]).unpack_from
    names["bitmap_size"] = bitmap_size = (len(plan) + 7) // 8
    # The bitmap's bits past the last column are set (MariaDB): only the columns' bits say NULL.
    names["null_bits"] = (1 << len(plan)) - 1
    return types.FunctionType(_code(tuple(shape), bitmap_size), names)


@functools.lru_cache(maxsize=64)
def _code(shape: tuple[tuple[Any, ...], ...], bitmap_size: int) -> types.CodeType:
    """The decoding function's code for a shape: ("fixed", struct layout, columns), ("text", length
    bytes) or ("call",), in the columns' order; and the size of its NULL bitmaps."""
    lines, column = [], 0
    for number, part in enumerate(shape):
        if part[0] == "fixed":
            values = "".join(f"v{column + offset}, " for offset in range(part[2]))
            lines += [f"{values}= u{number}(body, at)", f"at += {struct.calcsize(part[1])}"]
            column += part[2]
            continue
        if part[0] == "text":
            length = "body[at]" if part[1] == 1 else "(body[at] | body[at + 1] << 8)"
            lines += [f"end_of = at + {part[1]} + {length}",
                      f"v{column} = body[at + {part[1]}:end_of].decode(c{column}, x{column})", "at = end_of"]
        else:
            lines.append(f"v{column}, at = r{column}(body, at)")
        column += 1
    image = ", ".join(f"n{index}: v{index}" for index in range(column))
    body = "\n".join(" " * 12 + line for line in lines)
    bitmap = "body[at]" if bitmap_size == 1 else "int.from_bytes(body[at:at + bitmap_size], 'little')"
    source = f"""
def decode(body):
    images = []
    append = images.append
    at, end = 0, len(body)
    while at < end:
        if not {bitmap} & null_bits:
            at += bitmap_size
{body}
            append({{{image}}})
        else:
            image, at = with_nulls(body, at, plan, bitmap_size)
            append(image)
    return images
"""
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<mysql_row_decoder {len(shape)} parts>", "exec"), namespace)
    return namespace["decode"].__code__
