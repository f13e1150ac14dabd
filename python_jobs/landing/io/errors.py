"""The landing job's own error: it cannot start, and the message says what to do."""


class LandingError(RuntimeError):
    """The landing job cannot start; the message says what to do."""
