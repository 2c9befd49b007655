"""A store's location as it may be printed: the one place a location (a path, a URL of any form
SQLAlchemy reads, a typo of one, a libpq `key=value` string) becomes text for a message, a log
line, a result or a page, with its password and secret-looking parameters masked; and `scrub`,
which takes those secrets out of any other text (a driver's exception) before it is shown."""
from __future__ import annotations

import re
from urllib.parse import unquote

MASK = "***"

# a scheme and the slashes after it (`postgresql://`, `sqlite:///`, the typo `postgres:/`)
_SCHEME = re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.-]*:/*")
# a parameter whose name says it holds a secret: in a query string (`?password=`, `&sslpassword=`,
# `odbc_connect=...PWD...`) or a libpq keyword string (`password='x y'`); the value masked
_SECRET_NAME = r"[\w.-]*(?:pass|pwd|secret|token|key|auth|cred|odbc_connect|signature)[\w.-]*"
_SECRET_PARAM = re.compile(rf"(?i)((?:^|[?&;\s]){_SECRET_NAME}\s*=\s*)('(?:[^'\\]|\\.)*'?|[^&;\s]*)")
_SECRET_VALUE = re.compile(rf"(?i)(?:^|[?&;\s]){_SECRET_NAME}\s*=\s*('(?:[^'\\]|\\.)*'?|[^&;\s]*)")
# a location's form inside other text: a URL, up to a quote or blank
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]*")
_SHORT = 4     # a secret this short is taken out of other text only where it stands alone


def printable(named: str) -> str:
    """`named` with what could be a password masked: everything between the user name's `:`
    and the last `@` (a password holding an `@`, `/` or `?` included; a path holding both a
    `:` and an `@` loses that stretch too, which costs nothing secret), and the value of every
    secret-looking parameter."""
    text = str(named)
    head = _SCHEME.match(text)
    start = head.end() if head else 0
    rest = text[start:]
    at = rest.rfind("@")
    if at >= 0:
        colon = rest.find(":", 0, at)
        if colon >= 0:
            rest = rest[:colon + 1] + MASK + rest[at:]
    return text[:start] + _SECRET_PARAM.sub(lambda m: m.group(1) + MASK, rest)


def secrets(named: str) -> set[str]:
    """The secrets `named` holds: its password (as typed and percent-decoded; each stretch
    between `@`s too, since a parser that splits at the first `@` reads the rest as a host) and
    the values of its secret-looking parameters."""
    text = str(named)
    head = _SCHEME.match(text)
    rest = text[head.end() if head else 0:]
    found: set[str] = set()
    at = rest.rfind("@")
    if at >= 0:
        colon = rest.find(":", 0, at)
        if colon >= 0:
            password = rest[colon + 1:at]
            found.update([password, *password.split("@")])
    for m in _SECRET_VALUE.finditer(rest):
        value = m.group(1)
        found.update([value, value.strip("'")])
    found |= {unquote(s) for s in found} | {unquote(s).replace("+", " ") for s in found}
    return {s for s in found if s}


def scrub(text: str, named: str | None = None) -> str:
    """`text` (an exception's, a driver's) fit to show: every URL in it printable, every
    secret-looking `key=value` masked, and each secret of the location `named` taken out."""
    out = _URL_IN_TEXT.sub(lambda m: printable(m.group(0)), str(text))
    out = _SECRET_PARAM.sub(lambda m: m.group(1) + MASK, out)
    if named is None:
        return out
    for secret in sorted(secrets(named), key=len, reverse=True):
        if secret == MASK:
            continue
        if len(secret) >= _SHORT:
            out = out.replace(secret, MASK)
        else:
            out = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", MASK, out)
    return out
