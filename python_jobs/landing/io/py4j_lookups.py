"""Py4J's look-ups of classes and static methods, kept in the Python process.

Each `F.col`, `F.lit`, `F.expr` asks the JVM twice before the call itself: what the name `functions`
is (py4j tries it bare and through each of PySpark's imports in turn, org.apache.spark.api.java.*,
...: a search of the whole class path for each miss; org.apache.spark.sql.* is the seventh) and
whether `col` is a member of it. PySpark's own `SparkSession`, `SparkSession$` and `PythonUtils` are
asked so for every statement too, and py4j keeps none of the answers: a run of 50 small mirrors
made 61,430 such round trips, 26 s of its Python threads' time, and the JVM's class-path searches
were 8% of its CPU (Java Flight Recorder).

A class the JVM found stays that class (class loaders do not unload what they loaded), and a static
method stays a method, so the JVM view keeps each class it found and each kept class its static
methods and nested classes, and a Scala object's one instance (`MODULE$`, final). Asked each time,
as before: packages (a name not found as a class is answered "package", and may be found once a jar
is added), other fields (their values may change), and anything not found. Classes found through a JavaPackage (`spark._jvm.org.apache...`) are not kept:
the helpers' jar is added per JVM thread (iceberg_jvm.py), so which of those a thread sees may
differ; iceberg_jvm keeps its classes per thread with `kept_class`.
"""

from __future__ import annotations

from typing import Any

from py4j.java_gateway import JavaClass, JavaMember, JVMView


# A Scala object's one instance: a static final field of its class (`SparkSession$`), which PySpark's
# SparkSession.builder asks for on every getOrCreate (dbt-spark's cursor calls it for each statement).
SCALA_OBJECT_INSTANCE = "MODULE$"


class KeptMembersClass(JavaClass):
    """A JavaClass that keeps its static methods and nested classes once the JVM has named them, and
    a Scala object's instance."""

    def __getattr__(self, name: str) -> Any:
        member = super().__getattr__(name)
        if isinstance(member, JavaClass):
            member = KeptMembersClass(member._fqn, self._gateway_client)
        if isinstance(member, (JavaClass, JavaMember)) or (name == SCALA_OBJECT_INSTANCE and self._fqn.endswith("$")):
            # Found through normal attribute look-up from now on: __getattr__ is not called again.
            self.__dict__[name] = member
        return member


class KeptClassesView(JVMView):
    """The JVM view, keeping each class a name was found to be (through PySpark's imports)."""

    def __getattr__(self, name: str) -> Any:
        found = super().__getattr__(name)
        if isinstance(found, JavaClass):
            found = KeptMembersClass(found._fqn, self._gateway_client)
            self.__dict__[name] = found
        return found


def keep_jvm_lookups(spark: Any) -> None:
    """From now on the session's JVM view keeps the classes and static methods it finds (once per
    process: every session of a process shares PySpark's one gateway and view)."""
    jvm = spark.sparkContext._jvm
    if type(jvm) is JVMView:
        jvm.__class__ = KeptClassesView


def kept_class(class_name: str, gateway_client: Any) -> KeptMembersClass:
    """A JavaClass by its full name that keeps its static methods: for a caller that looked it up already."""
    return KeptMembersClass(class_name, gateway_client)
