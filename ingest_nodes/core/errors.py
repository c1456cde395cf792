"""The error a venue payload raises when it cannot be read."""

from __future__ import annotations

from ladder_process.errors import LadderError


class VenuePayloadError(LadderError):
    """A venue frame, snapshot or level could not be parsed (bad JSON, a missing field, a bad number).

    The message names what was wrong, never the whole payload (frames can be large).
    """

    code = "venue_payload"
