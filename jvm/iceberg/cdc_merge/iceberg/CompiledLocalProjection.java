package cdc_merge.iceberg;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.MutableProjection;
import org.apache.spark.sql.catalyst.expressions.MutableProjection$;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.Unevaluable;
import org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation$;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;

import scala.Function1;
import scala.collection.JavaConverters;
import scala.collection.Seq;
import scala.runtime.AbstractPartialFunction;

/**
 * Spark's ConvertToLocalRelation, but a projection over a local relation of many rows is computed by
 * a generated projection (MutableProjection.create: code compiled once per projection, kept in Spark's
 * code cache) instead of an interpreted one. Spark folds a batch held in the driver (the model's
 * columns parsed from each event, the classification's lookups) row by row through the interpreted
 * projection: docs/apply_service.md, "Build order", step 2. Filters and limits are Spark's own rule's.
 */
public final class CompiledLocalProjection extends Rule<LogicalPlan> {
    /** Below this many rows the interpreted projection is cheaper than compiling one. */
    private final int minRows;

    public CompiledLocalProjection(int minRows) {
        this.minRows = minRows;
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        LogicalPlan projected = plan.transformUp(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
            @Override
            public boolean isDefinedAt(LogicalPlan node) {
                return compiled(node) != null;
            }

            @Override
            public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 node, Function1<A1, B1> fallback) {
                LogicalPlan result = compiled(node);
                @SuppressWarnings("unchecked")
                B1 answer = result != null ? (B1) result : fallback.apply(node);
                return answer;
            }
        });
        return ConvertToLocalRelation$.MODULE$.apply(projected);
    }

    private LogicalPlan compiled(LogicalPlan node) {
        if (!(node instanceof Project) || !(((Project) node).child() instanceof LocalRelation)) {
            return null;
        }
        Project project = (Project) node;
        LocalRelation relation = (LocalRelation) project.child();
        List<InternalRow> rows = JavaConverters.seqAsJavaList(relation.data());
        List<NamedExpression> columns = JavaConverters.seqAsJavaList(project.projectList());
        if (rows.size() < minRows || columns.stream().anyMatch(column -> unevaluable((Expression) column))) {
            return null;
        }
        MutableProjection projection = MutableProjection$.MODULE$.create(
            (Seq<Expression>) (Seq<?>) project.projectList(), relation.output());
        projection.initialize(0);
        List<InternalRow> computed = new ArrayList<>(rows.size());
        for (InternalRow row : rows) {
            computed.add(projection.apply(row).copy());
        }
        List<Attribute> output = new ArrayList<>(columns.size());
        for (NamedExpression column : columns) {
            output.add(column.toAttribute());
        }
        return new LocalRelation(JavaConverters.asScalaBuffer(output).toSeq(),
            JavaConverters.asScalaBuffer(computed).toSeq(), relation.isStreaming());
    }

    private static boolean unevaluable(Expression expression) {
        return expression.exists(new scala.runtime.AbstractFunction1<Expression, Object>() {
            @Override
            public Object apply(Expression e) {
                return e instanceof Unevaluable && !(e instanceof AttributeReference);
            }
        });
    }
}
