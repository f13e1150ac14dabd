package cdc_merge.iceberg;

import java.util.Arrays;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.SQLExecution$;

import scala.Option;
import scala.collection.JavaConverters;
import scala.runtime.AbstractFunction0;

/**
 * A query's rows computed now and held in the driver as a local relation (raw_ranges.in_driver): as
 * the rows Spark's plan returns, where Dataset.collectAsList and createDataFrame convert each to a
 * Row and back. Run as a SQL execution of its own, as Dataset's actions are.
 */
public final class CollectedRows {
    private CollectedRows() {
    }

    /** rows' result as a local relation of its columns. */
    public static LocalRelation collected(Dataset<Row> rows) {
        QueryExecution execution = rows.queryExecution();
        InternalRow[] collected = SQLExecution$.MODULE$.withNewExecutionId(execution, Option.apply("collect"),
            new AbstractFunction0<InternalRow[]>() {
                @Override
                public InternalRow[] apply() {
                    // Each row returned is a copy of its own (SparkPlan.executeCollect decodes them so).
                    return execution.executedPlan().executeCollect();
                }
            });
        return new LocalRelation(execution.analyzed().output(),
            JavaConverters.asScalaBuffer(Arrays.asList(collected)).toIndexedSeq(), false);
    }
}
