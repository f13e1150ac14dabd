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
        self.java_exception = FakeJavaException("org.apache.iceberg.exceptions.ValidationException: outer",
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
    assert "ValidationException: outer" in message and "caused by: java.lang.IllegalStateException: inner" in message
    assert "An error occurred while calling" not in message and "\tat org.apache" not in message


def test_other_errors_pass_unchanged():
    with pytest.raises(KeyError):
        adapter_class(KeyError("k"))().failing()


def test_a_value_a_cast_refused_in_a_task_is_its_message_alone():
    """A history's cast fails in a Spark task: the job's error holds the task's frames and the driver's."""
    from dbt.adapters.cdc_spark.connections import java_error_message

    refused = "java.lang.RuntimeException: cdc_merge: JSON field 'price' holds 12345678.90, which decimal(5,2) cannot hold"
    task = FakeJavaException(f"{refused}\n\tat org.apache.spark.sql.catalyst.expressions.RaiseError.eval(misc.scala:90)")
    job = FakeJavaException("org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed 1 "
                            f"times, most recent failure: Lost task 0.0: {refused}\n\tat a.b(C.java:1)\n\t... 12 more\n"
                            "Driver stacktrace:\n\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages", task)
    assert java_error_message(job) == refused
    other = FakeJavaException("org.apache.spark.SparkException: Job aborted: boom\n\tat a.b(C.java:1)\n\t... 3 more\nnext line",
                              FakeJavaException("java.io.IOException: disk full\n\tat x.y(Z.java:2)"))
    assert java_error_message(other) == ("org.apache.spark.SparkException: Job aborted: boom\nnext line\n"
                                         "  caused by: java.io.IOException: disk full")


def test_a_method_replaced_on_its_mixin_is_the_one_called():
    """A test replaces a mixin's method (monkeypatch on RunStateMethods): the adapter calls the replacement."""
    def original(self):
        return "original"

    original.__module__ = "dbt.adapters.cdc_spark.run_state_methods"
    mixin = type("Mixin", (), {"answer": original})
    adapter = jvm_errors_as_messages(type("Adapter", (mixin,), {"_available_": frozenset({"answer"})}))
    assert adapter().answer() == "original"
    mixin.answer = lambda self: "replaced"
    assert adapter().answer() == "replaced"
