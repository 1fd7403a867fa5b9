"""JSON lines as crftag writes them: one record a line, non-ASCII kept as it is, and every
character that some reader takes for a line end escaped, so a record never splits across lines.
"""

from __future__ import annotations

import json

__all__ = ["LINE_BREAKS", "json_line"]

# Characters that some readers take for line ends (Python's str.splitlines, JavaScript), as
# str.translate's table; json.dumps escapes the ASCII ones already.
LINE_BREAKS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def json_line(record: dict) -> str:
    """One JSON lines record and its line end."""
    return json.dumps(record, ensure_ascii=False).translate(LINE_BREAKS) + "\n"
