"""The engine worker's failure record: the chain of causes the runner reads instead of the engine's log."""

from bench.engines.worker import exception_causes


class ForeignError(Exception):
    """An exception whose text carries another runtime's stack trace, as py4j's Py4JJavaError does."""


def test_causes_name_python_chain_and_a_foreign_trace_outermost_first():
    trace = ("An error occurred while calling o63.sql.\n"
             ": org.apache.spark.SparkException: Job aborted.\n"
             "\tat org.apache.spark.sql.Dataset.sql(Dataset.scala:1)\n"
             "Caused by: org.apache.iceberg.exceptions.ValidationException: Cannot commit, found new position "
             "delete for replaced data file\n"
             "\tat org.apache.iceberg.MergingSnapshotProducer.validate(MergingSnapshotProducer.java:9)\n")
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise ForeignError(trace) from inner
    except ForeignError as exc:
        causes = exception_causes(exc)
    assert causes == [
        "ForeignError: An error occurred while calling o63.sql.",
        "org.apache.spark.SparkException: Job aborted.",
        "org.apache.iceberg.exceptions.ValidationException: Cannot commit, found new position delete for replaced "
        "data file",
        "KeyError: 'inner'",
    ]


def test_an_exception_without_text_or_chain_is_one_cause():
    assert exception_causes(RuntimeError()) == ["RuntimeError: "]
