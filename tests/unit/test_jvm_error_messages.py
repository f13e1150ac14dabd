"""connections.py jvm_errors_as_messages: an error of the JVM in one of the plugin's methods that macros
call is raised as its message (the exception and its causes, a line each), as a statement's is."""

from __future__ import annotations

import pytest
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.cdc_spark.connections import jvm_errors_as_messages


class FakeJavaException:
    def __init__(self, text: str, cause: "FakeJavaException | None" = None) -> None:
        self.text, self.cause = text, cause

    def toString(self) -> str:  # noqa: N802 - the JVM's name
        return self.text

    def getCause(self) -> "FakeJavaException | None":  # noqa: N802 - the JVM's name
        return self.cause


class Py4JLikeError(Exception):
    def __init__(self) -> None:
        super().__init__("An error occurred while calling o818.optimizedPlan.\n\tat org.apache.spark.sql...")
        self.java_exception = FakeJavaException("java.lang.RuntimeException: cdc_merge: JSON field 'amount' holds 1",
                                                FakeJavaException("java.lang.IllegalStateException: inner"))


def adapter_class(error: Exception) -> type:
    def kept(self, value):
        return value

    def failing(self):
        raise error

    for function in (kept, failing):
        function.__module__ = "dbt.adapters.cdc_spark.mirror_write_methods"
    return jvm_errors_as_messages(type("Adapter", (), {"_available_": frozenset({"kept", "failing"}), "kept": kept,
                                                        "failing": failing}))


def test_a_jvm_error_is_raised_as_its_message_and_causes():
    adapter = adapter_class(Py4JLikeError())()
    assert adapter.kept(3) == 3
    with pytest.raises(DbtRuntimeError) as raised:
        adapter.failing()
    message = str(raised.value)
    assert "cdc_merge: JSON field 'amount' holds 1" in message and "caused by: java.lang.IllegalStateException: inner" in message
    assert "An error occurred while calling" not in message and "\tat org.apache" not in message


def test_other_errors_pass_unchanged():
    with pytest.raises(KeyError):
        adapter_class(KeyError("k"))().failing()
