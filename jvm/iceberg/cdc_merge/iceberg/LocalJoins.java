package cdc_merge.iceberg;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.BasePredicate;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.JoinedRow;
import org.apache.spark.sql.catalyst.expressions.Predicate$;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection$;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys$;
import org.apache.spark.sql.catalyst.plans.Inner$;
import org.apache.spark.sql.catalyst.plans.JoinType;
import org.apache.spark.sql.catalyst.plans.LeftOuter$;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.JoinHint;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.BooleanType$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.LongType$;

import scala.Option;
import scala.Tuple8;
import scala.collection.JavaConverters;
import scala.collection.Seq;
import scala.runtime.AbstractPartialFunction;

/**
 * Joins of relations the driver holds, computed in the driver. Spark's optimizer computes the
 * projections and filters of a local relation itself (ConvertToLocalRelation), but a join of two
 * local relations (a small batch's rows with its keys' stored rows from the key index) is a Spark
 * job: a broadcast, a join, and the rows converted to Rows and back to be kept (0.4 s for 15,000
 * rows). Here an inner or left outer equi-join of two local relations becomes the local relation of
 * its rows, with Spark's own semantics: keys bound by Spark's projections, a null key matches
 * nothing, the join's other condition evaluated on each pair. In this jar beside the other helpers
 * the apply calls in the driver.
 */
public final class LocalJoins {
    private LocalJoins() {
    }

    /**
     * plan with each such join of at most maxRows rows a side (and out) replaced by its rows; null
     * when it has none.
     */
    public static LogicalPlan joined(LogicalPlan plan, int maxRows) {
        LogicalPlan result = plan.transformUp(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
            @Override
            public boolean isDefinedAt(LogicalPlan node) {
                return node instanceof Join && joinable((Join) node, maxRows);
            }

            @Override
            public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 node, scala.Function1<A1, B1> otherwise) {
                if (!isDefinedAt(node)) {
                    return otherwise.apply(node);
                }
                LocalRelation rows = rowsOf((Join) node, maxRows);
                @SuppressWarnings("unchecked")
                B1 result = rows == null ? (B1) node : (B1) rows;
                return result;
            }
        });
        return result == plan ? null : result;  // transformUp returns the plan itself when nothing changed
    }

    private static boolean joinable(Join join, int maxRows) {
        JoinType type = join.joinType();
        return (type == Inner$.MODULE$ || type == LeftOuter$.MODULE$)
            && small(join.left(), maxRows) && small(join.right(), maxRows);
    }

    private static boolean small(LogicalPlan side, int maxRows) {
        return side instanceof LocalRelation && !((LocalRelation) side).isStreaming()
            && ((LocalRelation) side).data().size() <= maxRows;
    }

    /** The join's rows, or null when it has no equi-join keys or yields more than maxRows rows. */
    private static LocalRelation rowsOf(Join join, int maxRows) {
        Option<Tuple8<JoinType, Seq<Expression>, Seq<Expression>, Option<Expression>, Option<Expression>,
            LogicalPlan, LogicalPlan, JoinHint>> keys = ExtractEquiJoinKeys$.MODULE$.unapply(join);
        if (keys.isEmpty() || keys.get()._2().isEmpty()) {
            return null;
        }
        LocalRelation left = (LocalRelation) join.left();
        LocalRelation right = (LocalRelation) join.right();
        boolean outer = join.joinType() == LeftOuter$.MODULE$;
        List<Attribute> pairColumns = new ArrayList<>(JavaConverters.seqAsJavaList(left.output()));
        for (Attribute column : JavaConverters.seqAsJavaList(right.output())) {
            // Outer: the right side's columns are null where nothing matched, whatever they declare.
            pairColumns.add(outer ? column.withNullability(true) : column);
        }
        Seq<Attribute> both = JavaConverters.asScalaBuffer(pairColumns).toList();
        UnsafeProjection leftKey = UnsafeProjection$.MODULE$.create(keys.get()._2(), left.output());
        UnsafeProjection rightKey = UnsafeProjection$.MODULE$.create(keys.get()._3(), right.output());
        BasePredicate other = null;
        if (keys.get()._4().isDefined()) {
            other = Predicate$.MODULE$.create(keys.get()._4().get(), both);
            other.initialize(0);
        }
        @SuppressWarnings("unchecked")
        Seq<Expression> outputs = (Seq<Expression>) (Seq<?>) join.output();
        UnsafeProjection out = UnsafeProjection$.MODULE$.create(outputs, both);

        Map<UnsafeRow, List<InternalRow>> byKey = new HashMap<>();
        for (InternalRow row : JavaConverters.seqAsJavaList(right.data())) {
            UnsafeRow key = rightKey.apply(row);
            if (!key.anyNull()) {  // a null key equals nothing
                byKey.computeIfAbsent(key.copy(), k -> new ArrayList<>()).add(row);
            }
        }
        InternalRow nulls = new GenericInternalRow(right.output().size());
        JoinedRow pair = new JoinedRow();
        List<InternalRow> found = new ArrayList<>();
        for (InternalRow row : JavaConverters.seqAsJavaList(left.data())) {
            UnsafeRow key = leftKey.apply(row);
            List<InternalRow> matches = key.anyNull() ? null : byKey.get(key);
            boolean matched = false;
            if (matches != null) {
                for (InternalRow match : matches) {
                    pair.apply(row, match);
                    if (other == null || other.eval(pair)) {
                        found.add(out.apply(pair).copy());
                        matched = true;
                    }
                }
            }
            if (!matched && outer) {
                found.add(out.apply(pair.apply(row, nulls)).copy());
            }
            if (found.size() > maxRows) {
                return null;
            }
        }
        return new LocalRelation(join.output(), JavaConverters.asScalaBuffer(found).toIndexedSeq(), false);
    }

    /**
     * Per column of a local relation: a boolean column's count of true values, a bigint column's row
     * of its largest value (-1 when every value is null), -1 for any other; the batch's counts
     * (driver_counts.py) without a Spark job or the rows sent to Python.
     */
    public static long[] columnSummaries(LocalRelation relation) {
        List<Attribute> columns = JavaConverters.seqAsJavaList(relation.output());
        List<InternalRow> rows = JavaConverters.seqAsJavaList(relation.data());
        long[] summaries = new long[columns.size()];
        for (int column = 0; column < columns.size(); column++) {
            DataType type = columns.get(column).dataType();
            long summary = -1;
            if (type == BooleanType$.MODULE$) {
                summary = 0;
                for (InternalRow row : rows) {
                    if (!row.isNullAt(column) && row.getBoolean(column)) {
                        summary++;
                    }
                }
            } else if (type == LongType$.MODULE$) {
                long largest = Long.MIN_VALUE;
                int index = 0;
                for (InternalRow row : rows) {  // by iteration: the rows may be a linked list
                    if (!row.isNullAt(column) && (summary < 0 || row.getLong(column) > largest)) {
                        largest = row.getLong(column);
                        summary = index;
                    }
                    index++;
                }
            }
            summaries[column] = summary;
        }
        return summaries;
    }

    /** The text of a string column at a row of a local relation (null for null). */
    public static String stringAt(LocalRelation relation, int row, int column) {
        InternalRow found = relation.data().apply(row);
        return found.isNullAt(column) ? null : found.getUTF8String(column).toString();
    }
}
