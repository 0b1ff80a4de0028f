"""What every bad-input test asks of a helper's error: the right type, and a message that
names the argument, what it got and what was expected."""

import pytest


def assert_error_names(call, error, words) -> None:
    """``call()`` raises ``error`` whose message holds every one of ``words``."""
    with pytest.raises(error) as raised:
        call()
    for word in words:
        assert word in str(raised.value), f"{word!r} missing from: {raised.value}"
