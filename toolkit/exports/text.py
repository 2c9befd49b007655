"""Names and labels as the exports carry them: any text a result holds (a job named by a user,
a host name) made into what XML 1.0 and a Prometheus label can hold, whole otherwise."""
from __future__ import annotations

import re

# XML 1.0 cannot hold these at all, not even as character references: C0 controls other than
# tab, newline and carriage return, lone surrogates, U+FFFE and U+FFFF
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value) -> str:
    """`value` as text an XML writer can escape: what XML cannot hold at all becomes U+FFFD."""
    return _NOT_XML.sub("\ufffd", "" if value is None else str(value))


def label(value) -> str:
    """A label value: any text (the exposition escapes quotes, backslashes and newlines); a lone
    surrogate, which no UTF-8 output can carry, becomes U+FFFD."""
    return re.sub("[\ud800-\udfff]", "\ufffd", "" if value is None else str(value))
