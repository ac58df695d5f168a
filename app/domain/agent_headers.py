"""What headers an agent may be registered with: the server's own rules, stated once for the
store, the outbound client and the API's description of them."""

from __future__ import annotations

import re

# RFC 9110 token characters: anything else cannot be sent as a header name.
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}")
# Visible ASCII, with spaces and tabs only between visible characters (none leading or
# trailing), so no CR or LF can split the request. Checked when headers are stored, and again
# by the client before sending (a value stored before the check existed is never sent).
HEADER_VALUE = re.compile(r"(?:[\x21-\x7e]+(?:[ \t]+[\x21-\x7e]+)*)?")
# Set by the agent client itself: a user's value would break the call or its body cap.
RESERVED_HEADERS = frozenset(
    {"host", "content-length", "content-type", "transfer-encoding", "connection",
     "accept-encoding", "te", "upgrade", "keep-alive"}
)  # fmt: skip
