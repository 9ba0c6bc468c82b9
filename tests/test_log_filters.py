"""websockets' handshake log through the server's filters (realtime/server/logs.py):
a client hanging up mid-handshake is one INFO line, any other failure stays
an ERROR with its traceback."""

from __future__ import annotations

import logging

import pytest
from websockets.exceptions import ConnectionClosedError

from realtime.server.logs import redact_websockets_logs


@pytest.fixture
def handshake_log(caplog):
    redact_websockets_logs()
    logger = logging.getLogger("websockets.server")
    with caplog.at_level(logging.DEBUG, logger="websockets.server"):
        yield logger, caplog


def _fail(logger, exc: BaseException) -> None:
    try:
        raise exc
    except BaseException:
        logger.error("opening handshake failed", exc_info=True)


@pytest.mark.parametrize("exc", [ConnectionClosedError(None, None), EOFError("stream ends"),
                                 ConnectionResetError(104, "reset")])
def test_a_client_hanging_up_is_one_info_line(handshake_log, exc):
    logger, caplog = handshake_log
    _fail(logger, exc)
    (record,) = caplog.records
    assert record.levelno == logging.INFO and record.exc_info is None
    assert record.getMessage() == f"a client left during the opening handshake ({type(exc).__name__})"


def test_any_other_handshake_failure_stays_an_error_with_its_traceback(handshake_log):
    logger, caplog = handshake_log
    _fail(logger, ValueError("a bug in process_request"))
    (record,) = caplog.records
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert record.getMessage() == "opening handshake failed"
