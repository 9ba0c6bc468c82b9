"""clients.errors: one exception class per wire error code."""

import pytest

from clients import errors
from protocol import Error, ErrorCode


def test_every_error_code_has_its_own_class():
    classes = {code: errors.error_for(code.value) for code in ErrorCode}
    assert all(cls is not errors.TTSError for cls in classes.values())
    assert len(set(classes.values())) == len(ErrorCode)
    for code, cls in classes.items():
        assert issubclass(cls, errors.TTSError)
        assert cls.code == code.value


@pytest.mark.parametrize("code,cls", [("overloaded", errors.Overloaded),
                                      ("deadline_unmeetable", errors.DeadlineUnmeetable),
                                      ("slow_consumer", errors.SlowConsumer),
                                      ("unsupported", errors.Unsupported),
                                      ("internal", errors.InternalError)])
def test_error_for_maps_codes(code, cls):
    assert errors.error_for(code) is cls


def test_unknown_code_maps_to_base_and_keeps_code():
    assert errors.error_for("brand_new_code") is errors.TTSError
    exc = errors.from_message(Error(id="a", code="brand_new_code", message="later"))
    assert type(exc) is errors.TTSError
    assert exc.code == "brand_new_code"


def test_from_message_carries_fields():
    exc = errors.from_message(Error(id="u1", code="bad_message", message="bad", field="frame_ms"))
    assert isinstance(exc, errors.BadMessage)
    assert (exc.id, exc.field, exc.message) == ("u1", "frame_ms", "bad")
    assert "frame_ms" in str(exc) and "bad_message" in str(exc)
    with pytest.raises(errors.TTSError):
        raise exc
